//! The CLI's side of a daemon connection: connect, say hello, ask, read the answer.

use serde_json::{Value, json};
use tokio::io::{ReadHalf, WriteHalf};

use crate::Home;
use crate::frame::{Frame, FrameError, read_frame, write_frame};
use crate::server::DAEMON_PROTOCOL_VERSION;
use crate::transport::{self, ClientStream};

/// Why talking to the daemon failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error(
        "no nightcrow daemon is running for {0} (start one with `nightcrow` or `nightcrow -d`)"
    )]
    NotRunning(String),
    #[error("the daemon refused: {0}")]
    Refused(String),
    #[error("the daemon hung up")]
    HungUp,
    #[error(transparent)]
    Frame(#[from] FrameError),
}

/// A greeted connection to the daemon.
pub struct Connection {
    reader: ReadHalf<ClientStream>,
    writer: WriteHalf<ClientStream>,
}

impl Connection {
    /// Connects to the daemon of `home` and exchanges `hello`.
    pub async fn open(home: &Home) -> Result<Connection, ClientError> {
        let stream = transport::connect(home)
            .await
            .map_err(|_| ClientError::NotRunning(home.root().display().to_string()))?;
        let (reader, writer) = tokio::io::split(stream);
        let mut connection = Connection { reader, writer };
        connection
            .ask(json!({"type": "hello", "version": DAEMON_PROTOCOL_VERSION}))
            .await?;
        Ok(connection)
    }

    /// Sends one request and returns its answer; an `error` answer is an `Err`.
    pub async fn ask(&mut self, request: Value) -> Result<Value, ClientError> {
        self.send(&request.to_string()).await?;
        match self.next().await? {
            Some(Frame::Control(text)) => {
                let answer: Value =
                    serde_json::from_str(&text).map_err(|_| ClientError::Refused(text.clone()))?;
                if answer["type"] == "error" {
                    let message = answer["message"].as_str().unwrap_or_default();
                    return Err(ClientError::Refused(message.to_owned()));
                }
                Ok(answer)
            }
            Some(Frame::Output(_)) | None => Err(ClientError::HungUp),
        }
    }

    /// Sends one control message as it is.
    pub async fn send(&mut self, text: &str) -> Result<(), ClientError> {
        Ok(write_frame(&mut self.writer, &Frame::Control(text.to_owned())).await?)
    }

    /// The next frame from the daemon; `None` when it closed the connection.
    pub async fn next(&mut self) -> Result<Option<Frame>, ClientError> {
        Ok(read_frame(&mut self.reader).await?)
    }
}
