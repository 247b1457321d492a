//! How the command ended, as our own exit code, the way a shell reports it:
//! scripts that wrap `leasehold lock … -- CMD` should see what they would
//! have seen running CMD directly.

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

/// Offset a shell adds to a signal number to report death by that signal.
const SIGNAL_OFFSET: i32 = 128;

/// The exit code for a command that ended with `status`: its own code as is,
/// or 128 + N if signal N killed it (137 for SIGKILL, 143 for SIGTERM).
///
/// A status that is neither (a stop or continue report, which `wait` never
/// returns) maps to 1, "other error".
pub fn exit_code(status: ExitStatus) -> u8 {
    let code = match (status.code(), status.signal()) {
        (Some(code), _) => code,
        (None, Some(signal)) => SIGNAL_OFFSET + signal,
        (None, None) => 1,
    };
    // An exit code is 0..=255 and a signal number at most 64, so this always
    // fits; stay total anyway.
    u8::try_from(code).unwrap_or(u8::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A wait status as the kernel encodes it: `code << 8` for an exit,
    /// the signal number in the low 7 bits for a death by signal.
    fn exited(code: i32) -> ExitStatus {
        ExitStatus::from_raw(code << 8)
    }

    fn killed(signal: i32) -> ExitStatus {
        ExitStatus::from_raw(signal)
    }

    #[test]
    fn exit_codes_pass_through() {
        assert_eq!(exit_code(exited(0)), 0);
        assert_eq!(exit_code(exited(7)), 7);
        assert_eq!(exit_code(exited(255)), 255);
    }

    #[test]
    fn death_by_signal_is_128_plus_the_signal() {
        assert_eq!(exit_code(killed(libc::SIGKILL)), 137);
        assert_eq!(exit_code(killed(libc::SIGTERM)), 143);
        assert_eq!(exit_code(killed(libc::SIGINT)), 130);
    }

    #[test]
    fn core_dump_flag_does_not_change_the_code() {
        // 0x80 is WCOREFLAG: SIGSEGV with a core dump is still 128 + 11.
        assert_eq!(exit_code(ExitStatus::from_raw(libc::SIGSEGV | 0x80)), 139);
    }

    #[test]
    fn a_stop_report_maps_to_other_error() {
        // 0x7f in the low byte means "stopped", here by SIGSTOP.
        assert_eq!(
            exit_code(ExitStatus::from_raw((libc::SIGSTOP << 8) | 0x7f)),
            1
        );
    }
}
