import BearerIO

/// Event loops shared by the mock servers of all in-process tests (the proxies get their own).
package let mockGroup = EventLoopGroup(count: 2, name: "test-mocks")
