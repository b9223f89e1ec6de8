import BearerIO
import Glibc
import Testing

@testable import BearerCLI

/// What `bearer-proxy run` does with each signal in each state: passed on to the program unless the
/// terminal already sent it to the program's group (SI_KERNEL while they share it).
@Suite struct WrappedCommandStateMachineTests {
    static let fromKill = ReceivedSignal(number: SIGTERM, isFromKernel: false, senderPID: 4242)
    static let fromTerminal = ReceivedSignal(number: SIGINT, isFromKernel: true)

    func running(sharesProcessGroup: Bool, pid: pid_t = 77) -> WrappedCommandStateMachine {
        var machine = WrappedCommandStateMachine()
        machine.spawnStarting(sharesProcessGroup: sharesProcessGroup)
        #expect(machine.childStarted(pid: pid) == [])
        return machine
    }

    @Test func beforeTheProgramStartsASignalEndsRunWith128PlusItsNumber() {
        var machine = WrappedCommandStateMachine()
        #expect(machine.signalReceived(Self.fromKill) == .exit(status: 128 + SIGTERM))
        var other = WrappedCommandStateMachine()
        #expect(other.signalReceived(Self.fromTerminal) == .exit(status: 128 + SIGINT))
    }

    @Test(arguments: [false, true])
    func aSignalSentWithKillIsPassedOnWhateverTheGroup(sharesProcessGroup: Bool) {
        var machine = self.running(sharesProcessGroup: sharesProcessGroup)
        #expect(machine.signalReceived(Self.fromKill) == .forward(SIGTERM, to: 77))
        let hangUp = ReceivedSignal(number: SIGHUP, isFromKernel: false, senderPID: 1)
        #expect(machine.signalReceived(hangUp) == .forward(SIGHUP, to: 77))
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
        var machine = WrappedCommandStateMachine()
        machine.spawnStarting(sharesProcessGroup: true)
        #expect(machine.signalReceived(Self.fromKill) == .keep)
        #expect(machine.signalReceived(Self.fromTerminal) == .none)
        let quit = ReceivedSignal(number: SIGQUIT, isFromKernel: false)
        #expect(machine.signalReceived(quit) == .keep)
        #expect(machine.childStarted(pid: 9) == [SIGTERM, SIGQUIT])
        #expect(machine.state == .running(pid: 9, sharesProcessGroup: true))
    }

    @Test func aProgramThatCannotStartLeavesItsStatusForTheDrain() {
        var machine = WrappedCommandStateMachine()
        machine.spawnStarting(sharesProcessGroup: false)
        #expect(machine.signalReceived(Self.fromKill) == .keep)
        machine.spawnFailed(status: 127)
        #expect(machine.state == .ended(status: 127, sharedProcessGroup: false))
        #expect(machine.signalReceived(Self.fromKill) == .exit(status: 127))
    }

    /// After the program ended the proxy drains; a kill ends the drain at once with the program's
    /// status, while the Ctrl-C that ended the program, reaching `run` late, does not.
    @Test func afterTheProgramEndedAKillEndsTheDrainButTheTerminalsSignalDoesNot() {
        var shared = self.running(sharesProcessGroup: true)
        shared.childEnded(status: 130)
        #expect(shared.signalReceived(Self.fromTerminal) == .none)
        #expect(shared.signalReceived(Self.fromKill) == .exit(status: 130))
        var own = self.running(sharesProcessGroup: false)
        own.childEnded(status: 3)
        #expect(own.signalReceived(Self.fromTerminal) == .exit(status: 3))
    }
}
