import BearerCore
import BearerIO

@testable import BearerConfig
@testable import BearerProxy
@testable import BearerSession

extension NamedSession {
    /// A session for tests of routing and of the connection machine: its token session has no token
    /// source and a timer nobody advances.
    static func standalone(_ configuration: Configuration, name: String = "default", index: Int = 0) -> NamedSession {
        NamedSession(
            name: name,
            index: index,
            tokens: TokenSession(
                configuration: configuration,
                source: nil,
                store: nil,
                logger: .silent,
                timers: ManualTimerScheduler()
            ),
            configuration: configuration
        )
    }
}
