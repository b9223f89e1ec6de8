import BearerCore
import BearerFuzzTargets
import Glibc

// bearer-fuzz TARGET [ARGUMENT...]: one target of fuzz/Targets.
//
// Built by scripts/fuzz with libFuzzer linked in (without its main), it hands the arguments to
// libFuzzer's driver (corpus directories, -max_total_time=…, every libFuzzer flag). In an ordinary
// build libFuzzer is not there, and it runs the target once on each file named, or on each file of
// each directory named: the replay of a crash, or of a corpus, without the fuzzing toolchain.

let usage =
    "usage: bearer-fuzz TARGET [CORPUS_DIR... | FILE... | -libfuzzer_flag=VALUE...]\ntargets: "
    + FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")

var arguments = CommandLine.arguments
let target: FuzzTarget
if arguments.count >= 2, let named = FuzzTarget(rawValue: arguments[1]) {
    target = named
    arguments.remove(at: 1)
} else if let inherited = getenv(LibFuzzer.targetVariable).flatMap({ FuzzTarget(rawValue: String(cString: $0)) }) {
    target = inherited
} else {
    try? SystemCall.writeAll(STDERR_FILENO, Array((usage + "\n").utf8))
    exit(2)
}

if let driver = LibFuzzer.driver() {
    exit(LibFuzzer.run(target, arguments: arguments, driver: driver))
}
var count = 0
for path in arguments.dropFirst() where !path.hasPrefix("-") {
    for file in Replay.files(at: path) {
        target.run(Replay.contents(of: file))
        count += 1
    }
}
let summary = "bearer-fuzz: \(target.rawValue): ran \(count) inputs (a replay: libFuzzer is not linked in)\n"
try? SystemCall.writeAll(STDOUT_FILENO, Array(summary.utf8))
