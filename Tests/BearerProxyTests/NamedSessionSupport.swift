import BearerCore
import BearerIO

@testable import BearerConfig
@testable import BearerProxy
@testable import BearerSession

extension NamedSession {
    /// A session for tests of routing and of the connection machine, with the default session's
    /// settings of `configuration` under `name`: its token session has no token source and a timer
    /// nobody advances.
    static func standalone(_ configuration: Configuration, name: String = "default", index: Int = 0) -> NamedSession {
        var settings = configuration.defaultSession
        settings.name = name
        return NamedSession(
            name: name,
            index: index,
            tokens: TokenSession(
                settings: settings,
                process: configuration.process,
                source: nil,
                store: nil,
                logger: .silent,
                timers: ManualTimerScheduler()
            ),
            settings: settings
        )
    }
}
