import BearerCore
import Glibc

/// Asks for a value on the terminal: the username with echo, the password without (the terminal
/// stops echoing while it is typed, and echoes again even when Ctrl-C interrupts).
///
/// Only when standard input is a terminal: a script piping into the command must configure the
/// value instead, so a login never hangs waiting for a person who is not there.
enum TerminalPrompt {
    static var isAvailable: Bool { isatty(STDIN_FILENO) == 1 }

    enum Typed: Equatable {
        case line(String)
        case endOfInput
        /// Nothing was typed before the login's deadline.
        case timedOut
    }

    /// The line typed (without its newline). The prompt goes to stderr.
    static func ask(_ prompt: String, echo: Bool, until deadline: Instant) -> Typed {
        var saved = termios()
        let canSilence = !echo && tcgetattr(STDIN_FILENO, &saved) == 0
        if canSilence {
            var silent = saved
            silent.c_lflag &= ~tcflag_t(ECHO)
            savedTerminal = saved
            signal(SIGINT, restoreTerminalAndExit)
            tcsetattr(STDIN_FILENO, TCSAFLUSH, &silent)
        }
        Console.write(prompt, to: STDERR_FILENO)
        let line = self.readLine(until: deadline)
        if canSilence {
            tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved)
            signal(SIGINT, SIG_DFL)
            savedTerminal = nil
            Console.write("\n", to: STDERR_FILENO)
        }
        return line
    }

    /// Reads up to a newline from stdin, byte by byte (nothing is read past it), until `deadline`.
    private static func readLine(until deadline: Instant) -> Typed {
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while bytes.count < 4096 {
            var ready = pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0)
            // The time left is computed on each try: a signal must not restart the whole wait.
            let polled = try? SystemCall.blocking("poll") {
                poll(&ready, 1, Int32(clamping: max((deadline - Instant.now()).nanoseconds / 1_000_000, 0)))
            }
            if polled == 0 { return .timedOut }
            let count = (try? SystemCall.blocking("read") { read(STDIN_FILENO, &byte, 1) }) ?? -1
            if count <= 0 { return bytes.isEmpty ? .endOfInput : .line(String(decoding: bytes, as: UTF8.self)) }
            if byte == 0x0A { break }
            bytes.append(byte)
        }
        if bytes.last == 0x0D { bytes.removeLast() }
        return .line(String(decoding: bytes, as: UTF8.self))
    }
}

/// The terminal settings to put back if Ctrl-C arrives while echo is off. Written only while no
/// handler is installed (before installing it, after removing it), so the handler reads it safely; a
/// lock would not be async-signal-safe.
nonisolated(unsafe) private var savedTerminal: termios?

/// SIGINT during a silent prompt: echo back on, then exit as the signal would have.
private func restoreTerminalAndExit(_ signalNumber: Int32) {
    // tcsetattr and _exit are async-signal-safe.
    if var saved = savedTerminal { tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved) }
    _exit(128 + signalNumber)
}
