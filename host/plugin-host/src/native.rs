//! The native runtime: a trusted child process on the same protocol, with piped stdio only
//! (no other descriptor of the daemon's), that cannot outlive the daemon. It is not
//! sandboxed: the config says `trusted = true` for it, and every start is logged as a
//! warning.

use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::process::{Child, Command};

use crate::cpu::CpuBudget;
use crate::process::{BoxFuture, ExitCause, Launched, PluginProcess};
use crate::spec::{PluginSource, PluginSpec, Sandbox};
use crate::usage::process_cpu_time;
use crate::{RUNTIME_DIR_VAR, StartError};

/// How often a native child's CPU time is read and charged to its budget.
const CPU_SAMPLE: Duration = Duration::from_millis(250);

/// Spawns the child. Environment: `[plugin.env]` only, like a wasm guest, plus the runtime
/// dir (and on Windows `SystemRoot`, without which system DLLs fail to initialise).
pub(crate) fn launch(spec: &PluginSpec) -> Result<Launched, StartError> {
    let path = match &spec.source {
        PluginSource::Path(path) => path,
        PluginSource::Builtin { .. } => {
            return Err(StartError::NativeBuiltin {
                plugin: spec.source.to_string(),
            });
        }
        PluginSource::Installed { name, .. } => {
            return Err(StartError::NativeInstalled {
                plugin: name.clone(),
            });
        }
    };
    let mut command = Command::new(path);
    command
        .args(&spec.args)
        .env_clear()
        .envs(
            spec.env
                .iter()
                .filter(|(key, _)| key != RUNTIME_DIR_VAR)
                .map(|(k, v)| (k, v)),
        )
        .env(RUNTIME_DIR_VAR, &spec.runtime_dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    #[cfg(windows)]
    {
        /// `CREATE_NO_WINDOW`: the child gets no console window.
        const CREATE_NO_WINDOW: u32 = 0x0800_0000;
        command.creation_flags(CREATE_NO_WINDOW);
        if let Some(root) = std::env::var_os("SystemRoot") {
            command.env("SystemRoot", root);
        }
    }
    #[cfg(unix)]
    {
        // Its own process group: a kill reaches anything it spawned, and a terminal's
        // job-control signals aimed at the daemon do not reach it.
        command.process_group(0);
    }
    #[cfg(target_os = "linux")]
    die_with_parent(&mut command);
    #[cfg(unix)]
    inherit_only_stdio(&mut command);
    tracing::warn!(
        plugin = %spec.name,
        path = %path.display(),
        "starting a native plugin: trusted code, run as you with no sandbox"
    );
    let mut child = command.spawn().map_err(|error| StartError::Spawn {
        path: path.clone(),
        message: error.to_string(),
    })?;
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        unreachable!("all three stdio streams were configured as piped");
    };
    Ok(Launched {
        stdin: Box::new(stdin),
        stdout: Box::new(stdout),
        stderr: Box::new(stderr),
        process: Box::new(NativeProcess {
            child,
            ended: None,
            cpu: CpuWatch::new(&spec.sandbox),
        }),
    })
}

/// `PR_SET_PDEATHSIG`: the kernel sends SIGKILL to the child when the thread that spawned
/// it ends, which covers `kill -9` of the daemon. (The spawning thread is a runtime worker
/// thread, which lives as long as the daemon's runtime.)
#[cfg(target_os = "linux")]
fn die_with_parent(command: &mut Command) {
    let parent = std::process::id();
    let set_death_signal = move || {
        // SAFETY: prctl(PR_SET_PDEATHSIG) and getppid are async-signal-safe and touch no
        // memory of ours, which is all a pre_exec closure may do between fork and exec.
        let (status, current_parent) = unsafe {
            (
                libc::prctl(
                    libc::PR_SET_PDEATHSIG,
                    libc::SIGKILL as libc::c_ulong,
                    0,
                    0,
                    0,
                ),
                libc::getppid(),
            )
        };
        if status != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // The daemon may have died between fork and prctl; then no signal will come.
        if u32::try_from(current_parent).ok() != Some(parent) {
            return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
        }
        Ok(())
    };
    // SAFETY: the closure only makes the async-signal-safe calls described above and
    // allocates nothing on its success path.
    unsafe {
        command.pre_exec(set_death_signal);
    }
}

/// Marks every descriptor above 2 close-on-exec in the child, so it starts with its three
/// pipes only: a descriptor some library opened without `O_CLOEXEC` (a pipe, a PTY, a
/// socket) would otherwise reach trusted-but-foreign code. Close-on-exec rather than close,
/// so the standard library's own exec-error pipe still works until the exec.
#[cfg(unix)]
fn inherit_only_stdio(command: &mut Command) {
    fn mark_each(first: libc::c_int) {
        // SAFETY: sysconf and fcntl are async-signal-safe and touch no memory of ours.
        let limit = unsafe { libc::sysconf(libc::_SC_OPEN_MAX) };
        let limit = libc::c_int::try_from(limit.clamp(0, 65_536)).unwrap_or(65_536);
        for fd in first..limit {
            // SAFETY: as above; an fd that is not open just fails with EBADF.
            unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
        }
    }
    let mark_inherited = || {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: close_range is a plain system call (Linux 5.11 for the CLOEXEC flag),
            // async-signal-safe, touching no memory.
            let status = unsafe {
                libc::syscall(
                    libc::SYS_close_range,
                    3 as libc::c_uint,
                    libc::c_uint::MAX,
                    libc::CLOSE_RANGE_CLOEXEC,
                )
            };
            if status == 0 {
                return Ok(());
            }
        }
        mark_each(3);
        Ok(())
    };
    // SAFETY: the closure only makes the async-signal-safe calls described above and
    // allocates nothing.
    unsafe {
        command.pre_exec(mark_inherited);
    }
}

struct NativeProcess {
    child: Child,
    ended: Option<ExitCause>,
    cpu: CpuWatch,
}

/// The child's CPU time, read every [`CPU_SAMPLE`] and charged to its budget (Linux, where
/// `/proc` gives it; elsewhere a native child's CPU is not limited).
struct CpuWatch {
    budget: CpuBudget,
    counted: Duration,
    percent: u32,
    window_secs: u32,
    /// The budget is used up; the child is to be stopped.
    spent: bool,
}

impl CpuWatch {
    fn new(sandbox: &Sandbox) -> CpuWatch {
        CpuWatch {
            budget: CpuBudget::new(sandbox, Instant::now()),
            counted: Duration::ZERO,
            percent: sandbox.cpu_percent,
            window_secs: sandbox.cpu_window_secs,
            spent: false,
        }
    }

    fn cause(&self) -> ExitCause {
        ExitCause::CpuBudget {
            percent: self.percent,
            window_secs: self.window_secs,
        }
    }

    /// Resolves once the child has used up its budget; never where its CPU time cannot be
    /// read. Cancel-safe: what was counted stays counted.
    async fn used_up(&mut self, pid: Option<u32>) {
        loop {
            tokio::time::sleep(CPU_SAMPLE).await;
            let Some(total) = pid.and_then(process_cpu_time) else {
                return std::future::pending().await;
            };
            let used = total.saturating_sub(self.counted);
            self.counted = total;
            if !self.budget.charge(Instant::now(), used) {
                return;
            }
        }
    }
}

impl NativeProcess {
    fn cause(status: std::io::Result<std::process::ExitStatus>) -> ExitCause {
        let status = match status {
            Ok(status) => status,
            Err(error) => {
                return ExitCause::Trapped {
                    message: format!("waiting for the child failed: {error}"),
                };
            }
        };
        if let Some(code) = status.code() {
            return ExitCause::Exited { code };
        }
        #[cfg(unix)]
        if let Some(signal) = std::os::unix::process::ExitStatusExt::signal(&status) {
            return ExitCause::Signalled { signal };
        }
        ExitCause::Trapped {
            message: format!("child ended: {status}"),
        }
    }

    #[cfg(unix)]
    fn kill_group(&self) {
        if let Some(pid) = self
            .child
            .id()
            .and_then(|pid| libc::pid_t::try_from(pid).ok())
        {
            // SAFETY: killpg takes plain integers and touches no memory. The group id is the
            // child's pid (`process_group(0)`), and the child is not reaped yet, so the id
            // cannot have been reused by an unrelated group.
            unsafe {
                libc::killpg(pid, libc::SIGKILL);
            }
        }
    }
}

impl PluginProcess for NativeProcess {
    fn wait(&mut self) -> BoxFuture<'_, ExitCause> {
        Box::pin(async move {
            if self.ended.is_none() && !self.cpu.spent {
                let pid = self.child.id();
                tokio::select! {
                    status = self.child.wait() => {
                        self.ended = Some(NativeProcess::cause(status));
                    }
                    () = self.cpu.used_up(pid) => self.cpu.spent = true,
                }
            }
            if self.ended.is_none() {
                // Over its CPU budget (set before any await, so a dropped `wait` loses
                // nothing): stop it and say why, not which signal did it.
                #[cfg(unix)]
                self.kill_group();
                let _ = self.child.start_kill();
                let _ = self.child.wait().await;
                self.ended = Some(self.cpu.cause());
            }
            self.ended.clone().unwrap_or(ExitCause::Killed)
        })
    }

    fn kill(&mut self) -> BoxFuture<'_, ExitCause> {
        Box::pin(async move {
            if let Some(cause) = &self.ended {
                return cause.clone();
            }
            #[cfg(unix)]
            self.kill_group();
            let _ = self.child.start_kill();
            let status = self.child.wait().await;
            let cause = match NativeProcess::cause(status) {
                _ if self.cpu.spent => self.cpu.cause(),
                ExitCause::Signalled { .. } | ExitCause::Trapped { .. } => ExitCause::Killed,
                ended_by_itself => ended_by_itself,
            };
            self.ended = Some(cause.clone());
            cause
        })
    }
}

impl Drop for NativeProcess {
    fn drop(&mut self) {
        // `kill_on_drop` ends the child; this also ends what it spawned.
        #[cfg(unix)]
        if self.ended.is_none() {
            self.kill_group();
        }
    }
}
