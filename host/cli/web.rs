//! `nightcrow web [DIR]`: the web client of the daemon (started in the background when
//! none runs) showing DIR's repository; `nightcrow web passwd`: its password, kept in the
//! config as an Argon2id hash, the rest of the file left as the user wrote it.

use std::io::{BufRead, IsTerminal};
use std::path::Path;

use nightcrow_client::Connection;
use nightcrow_client_protocol::daemon::{DaemonAnswer, DaemonRequest};

use crate::daemon::{ensure_running, open_repo};
use crate::{Failure, Settings};

/// Starts (or finds) the web client and prints where its page is.
pub fn run(settings: &Settings, dir: Option<&Path>) -> Result<(), Failure> {
    let repo = crate::attach::repository_root(&crate::attach::start_dir(dir)?);
    let tokio = crate::daemon::tokio()?;
    ensure_running(settings, &tokio)?;
    let url = tokio.block_on(async {
        let mut connection = Connection::open(&settings.home).await?;
        let repo = open_repo(&mut connection, repo).await?;
        match connection
            .ask(&DaemonRequest::Web { repo: Some(repo) })
            .await?
        {
            DaemonAnswer::Web { url } => Ok(url),
            answer => Err(Failure::from(format!("the daemon answered {answer:?}"))),
        }
    })?;
    outln!("nightcrow web client: {url}");
    outln!("(it runs in the daemon; `nightcrow stop` ends both)");
    Ok(())
}

/// Asks for a new password (twice, unechoed, at a terminal; one line from stdin
/// otherwise), writes its hash into `[web] password_hash` of `config`, and has a running
/// daemon take it at once.
pub fn passwd(settings: &Settings) -> Result<(), Failure> {
    let (home, config) = (&settings.home, settings.config.as_path());
    let hash = if std::io::stdin().is_terminal() {
        let first = rpassword::prompt_password("New web client password: ")
            .map_err(|e| format!("reading the password: {e}"))?;
        // Hashing checks it: one that would be refused is, before it is asked for again.
        let hash = nightcrow_web::auth::hash_password(&first)?;
        let again = rpassword::prompt_password("Again: ")
            .map_err(|e| format!("reading the password: {e}"))?;
        if first != again {
            return Err(Failure::from(
                "the two passwords differ; nothing was changed".to_owned(),
            ));
        }
        hash
    } else {
        let mut line = String::new();
        std::io::stdin()
            .lock()
            .read_line(&mut line)
            .map_err(|e| format!("reading the password from stdin: {e}"))?;
        nightcrow_web::auth::hash_password(line.trim_end_matches(['\r', '\n']))?
    };
    crate::create_config_folder(home, config)?;
    nightcrow_daemon::check_config_file(config).map_err(Failure::Config)?;
    let text = match std::fs::read_to_string(config) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(error) => return Err(Failure::from(format!("{}: {error}", config.display()))),
    };
    let updated = with_password_hash(&text, &hash)
        .map_err(|e| Failure::Config(format!("{}: {e}", config.display())))?;
    // The whole file must still be a valid config before it replaces the old one.
    nightcrow_config::parse(config, &updated, &settings.user_home)
        .map_err(|errors| Failure::Config(errors.to_string()))?;
    crate::write_atomically(config, &updated)?;
    outln!("web client password set in {}", config.display());
    let tokio = crate::daemon::tokio()?;
    if let Ok(mut connection) = tokio.block_on(Connection::open(home))
        && tokio
            .block_on(connection.ask(&DaemonRequest::Reload))
            .is_ok()
    {
        outln!("the running daemon has taken it");
    }
    Ok(())
}

/// `text` with `[web] password_hash` set to `hash`; comments, order and spacing kept.
fn with_password_hash(text: &str, hash: &str) -> Result<String, String> {
    let mut document: toml_edit::DocumentMut = text
        .parse()
        .map_err(|error: toml_edit::TomlError| error.to_string())?;
    let web = document
        .entry("web")
        .or_insert_with(|| toml_edit::Item::Table(toml_edit::Table::new()))
        .as_table_like_mut()
        .ok_or("`web` is not a table")?;
    web.insert("password_hash", toml_edit::value(hash));
    Ok(document.to_string())
}

#[cfg(test)]
mod tests {
    use super::with_password_hash;

    #[test]
    fn the_hash_goes_into_web_and_the_rest_stays_as_written() {
        let text = "# mine\n[shell]\nprogram = \"/bin/sh\"  # keep\n\n[web]\nport = 9000 # here\n";
        let updated = with_password_hash(text, "$argon2id$x").unwrap();
        assert_eq!(
            updated,
            "# mine\n[shell]\nprogram = \"/bin/sh\"  # keep\n\n[web]\nport = 9000 # here\npassword_hash = \"$argon2id$x\"\n"
        );
        let again = with_password_hash(&updated, "$argon2id$y").unwrap();
        assert!(again.contains("password_hash = \"$argon2id$y\"") && !again.contains("$x"));
        let fresh = with_password_hash("", "$argon2id$z").unwrap();
        assert_eq!(fresh, "[web]\npassword_hash = \"$argon2id$z\"\n");
        assert!(with_password_hash("web = 1\n", "$argon2id$z").is_err());
    }
}
