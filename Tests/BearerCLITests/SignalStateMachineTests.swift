import BearerIO
import Glibc
import Testing

@testable import BearerCLI

/// What each signal does in each state: the proxy's drain, reload and exits; `bearer-proxy run`'s
/// signals passed on to the program unless the terminal already sent it to the program's group
/// (SI_KERNEL while they share it).
@Suite struct SignalStateMachineTests {
    static let fromKill = ReceivedSignal(number: SIGTERM, isFromKernel: false, senderPID: 4242)
    static let fromTerminal = ReceivedSignal(number: SIGINT, isFromKernel: true)

    static let hangUp = ReceivedSignal(number: SIGHUP, isFromKernel: false, senderPID: 1)

    func running(sharesProcessGroup: Bool, pid: pid_t = 77) -> SignalStateMachine {
        var machine = SignalStateMachine(wrapsProgram: true)
        machine.spawnStarting(sharesProcessGroup: sharesProcessGroup)
        #expect(machine.childStarted(pid: pid) == [])
        return machine
    }

    /// The proxy: a signal during start-up exits 0 (nothing is in flight; SIGHUP has no config to
    /// re-read yet); serving, SIGHUP reloads and the first SIGTERM or SIGINT drains; draining, a second
    /// one exits at once with 1.
    @Test func theProxyExitsDuringStartUpReloadsWhileServingAndDrainsOnTheFirstStop() {
        var starting = SignalStateMachine(wrapsProgram: false)
        #expect(starting.signalReceived(Self.hangUp) == .none)
        #expect(starting.signalReceived(Self.fromTerminal) == .exit(status: 0, saying: .signalDuringStartUp))
        var machine = SignalStateMachine(wrapsProgram: false)
        machine.proxyStarted()
        #expect(machine.signalReceived(Self.hangUp) == .reload)
        #expect(machine.state == .serving)
        #expect(machine.signalReceived(Self.fromKill) == .stop)
        #expect(machine.state == .stopping)
        #expect(machine.signalReceived(Self.hangUp) == .none)
        #expect(machine.signalReceived(Self.fromTerminal) == .exit(status: 1, saying: .secondSignal))
    }

    /// logrotate's SIGUSR1: ignored while the proxy starts (the file it opens is the new one), the
    /// audit log reopened while it serves and while it drains; never a stop.
    @Test func userSignalOneReopensTheAuditLogAndNeverStops() {
        let rotate = ReceivedSignal(number: SIGUSR1, isFromKernel: false, senderPID: 1)
        var starting = SignalStateMachine(wrapsProgram: false)
        #expect(starting.signalReceived(rotate) == .none)
        #expect(starting.state == .starting)
        var machine = SignalStateMachine(wrapsProgram: false)
        machine.proxyStarted()
        #expect(machine.signalReceived(rotate) == .reopenLogs)
        #expect(machine.state == .serving)
        #expect(machine.signalReceived(Self.fromKill) == .stop)
        #expect(machine.signalReceived(rotate) == .reopenLogs)
        #expect(machine.state == .stopping)
        // `run`: the program's, passed on.
        var running = self.running(sharesProcessGroup: false)
        #expect(running.signalReceived(rotate) == .forward(SIGUSR1, to: 77))
    }

    @Test func beforeTheProgramStartsASignalEndsRunWith128PlusItsNumber() {
        var machine = SignalStateMachine(wrapsProgram: true)
        #expect(machine.signalReceived(Self.fromKill) == .exit(status: 128 + SIGTERM, saying: nil))
        var other = SignalStateMachine(wrapsProgram: true)
        #expect(other.signalReceived(Self.fromTerminal) == .exit(status: 128 + SIGINT, saying: nil))
    }

    @Test(arguments: [false, true])
    func aSignalSentWithKillIsPassedOnWhateverTheGroup(sharesProcessGroup: Bool) {
        var machine = self.running(sharesProcessGroup: sharesProcessGroup)
        #expect(machine.signalReceived(Self.fromKill) == .forward(SIGTERM, to: 77))
        #expect(machine.signalReceived(Self.hangUp) == .forward(SIGHUP, to: 77))
        #expect(machine.state == .running(pid: 77, sharesProcessGroup: sharesProcessGroup))
    }

    @Test func theTerminalsCtrlCIsNotSentASecondTimeToAProgramInTheSameGroup() {
        var machine = self.running(sharesProcessGroup: true)
        #expect(machine.signalReceived(Self.fromTerminal) == .none)
    }

    /// In a group of its own the program did not get the group's signal: it is passed on.
    @Test func aKernelSignalIsPassedOnToAProgramInAGroupOfItsOwn() {
        var machine = self.running(sharesProcessGroup: false)
        #expect(machine.signalReceived(Self.fromTerminal) == .forward(SIGINT, to: 77))
    }

    @Test func signalsDuringTheSpawnAreKeptAndPassedOnOnceThePIDIsKnown() {
        var machine = SignalStateMachine(wrapsProgram: true)
        machine.spawnStarting(sharesProcessGroup: true)
        #expect(machine.signalReceived(Self.fromKill) == .keep)
        #expect(machine.signalReceived(Self.fromTerminal) == .none)
        let quit = ReceivedSignal(number: SIGQUIT, isFromKernel: false)
        #expect(machine.signalReceived(quit) == .keep)
        #expect(machine.childStarted(pid: 9) == [SIGTERM, SIGQUIT])
        #expect(machine.state == .running(pid: 9, sharesProcessGroup: true))
    }

    @Test func aProgramThatCannotStartLeavesItsStatusForTheDrain() {
        var machine = SignalStateMachine(wrapsProgram: true)
        machine.spawnStarting(sharesProcessGroup: false)
        #expect(machine.signalReceived(Self.fromKill) == .keep)
        machine.spawnFailed(status: 127)
        #expect(machine.state == .ended(status: 127, sharedProcessGroup: false))
        #expect(machine.signalReceived(Self.fromKill) == .exit(status: 127, saying: nil))
    }

    /// After the program ended the proxy drains; a kill ends the drain at once with the program's
    /// status, while the Ctrl-C that ended the program, reaching `run` late, does not.
    @Test func afterTheProgramEndedAKillEndsTheDrainButTheTerminalsSignalDoesNot() {
        var shared = self.running(sharesProcessGroup: true)
        shared.childEnded(status: 130)
        #expect(shared.signalReceived(Self.fromTerminal) == .none)
        #expect(shared.signalReceived(Self.fromKill) == .exit(status: 130, saying: nil))
        var own = self.running(sharesProcessGroup: false)
        own.childEnded(status: 3)
        #expect(own.signalReceived(Self.fromTerminal) == .exit(status: 3, saying: nil))
    }
}
