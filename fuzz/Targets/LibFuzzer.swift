import BearerCore
import Glibc

/// libFuzzer's driver, when scripts/fuzz linked it in.
///
/// libFuzzer ships its own `main`; this one is linked without it (`libclang_rt.fuzzer_no_main`) so
/// that one executable serves every target and an ordinary build (no libFuzzer) still links and
/// replays. The driver is found at run time, by name: `LLVMFuzzerRunDriver` is exported for that.
package enum LibFuzzer {
    package typealias TestOneInput = @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
    package typealias Driver =
        @convention(c) (
            UnsafeMutablePointer<Int32>,
            UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
            TestOneInput
        ) -> Int32

    /// The target the C callback runs: libFuzzer's callback carries no context. Set once, before
    /// the driver starts, and read only by the driver's one fuzzing thread.
    nonisolated(unsafe) private static var target = FuzzTarget.http1

    package static func driver() -> Driver? {
        guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "LLVMFuzzerRunDriver") else { return nil }
        return unsafeBitCast(symbol, to: Driver.self)
    }

    /// Names the target to the processes libFuzzer starts itself (`-jobs`, `-fork`, `-merge`), which
    /// it runs with its own arguments: the target's name is not among them.
    package static let targetVariable = "BEARER_FUZZ_TARGET"

    /// Runs libFuzzer on `target` with `arguments` (the program's name first); its exit status.
    package static func run(_ target: FuzzTarget, arguments: [String], driver: Driver) -> Int32 {
        Self.target = target
        setenv(Self.targetVariable, target.rawValue, 1)
        var argc = Int32(arguments.count)
        let strings = arguments.map { strdup($0) } + [nil]
        let argv = UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>.allocate(capacity: strings.count)
        argv.initialize(from: strings, count: strings.count)
        defer {
            for string in strings { free(string) }
            argv.deallocate()
        }
        var argvPointer = argv
        return driver(&argc, &argvPointer) { data, size in
            LibFuzzer.target.run(size == 0 ? [] : Array(UnsafeBufferPointer(start: data, count: size)))
            return 0
        }
    }
}

/// Running a target on files, without libFuzzer: a crash's replay, a corpus in the tests.
package enum Replay {
    /// `path` if it is a file, else the files in it (sorted, not recursing).
    package static func files(at path: String) -> [String] {
        guard let directory = opendir(path) else { return [path] }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            if !name.hasPrefix("."), entry.pointee.d_type == DT_REG { names.append("\(path)/\(name)") }
        }
        return names.sorted()
    }

    package static func contents(of path: String) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return [] }
        defer { close(fd) }
        return (try? SystemCall.readToEnd(fd, limit: 1 << 20)) ?? []
    }
}
