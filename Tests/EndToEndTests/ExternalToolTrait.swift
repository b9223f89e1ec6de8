import BearerTestSupport
import Testing

extension Trait where Self == ConditionTrait {
    /// Runs the test (or suite) when `tool` is installed, or under CI; otherwise skips it with the
    /// reason naming what was checked and the Debian package that provides it.
    static func requires(_ tool: ExternalTool) -> Self {
        .enabled(if: tool.isInstalledOrCI, Comment(rawValue: tool.skipReason))
    }
}
