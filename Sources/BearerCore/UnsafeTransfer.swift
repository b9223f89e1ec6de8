/// Carries a loop-confined value through a `@Sendable` closure that will run on that same loop.
///
/// Sound only under that promise: the value is never touched on another thread. Used where the event
/// loop's API takes `@Sendable` closures (the resolver answering on the asking loop).
package struct UnsafeTransfer<Value>: @unchecked Sendable {
    package let value: Value
    package init(_ value: Value) { self.value = value }
}
