/// One parameter of a SETTINGS frame (RFC 9113 §6.5.1).
package struct HTTP2Setting: Equatable, Sendable {
    package struct Identifier: RawRepresentable, Hashable, Sendable {
        package var rawValue: UInt16
        package init(rawValue: UInt16) { self.rawValue = rawValue }

        package static let headerTableSize = Identifier(rawValue: 0x1)
        package static let enablePush = Identifier(rawValue: 0x2)
        package static let maxConcurrentStreams = Identifier(rawValue: 0x3)
        package static let initialWindowSize = Identifier(rawValue: 0x4)
        package static let maxFrameSize = Identifier(rawValue: 0x5)
        package static let maxHeaderListSize = Identifier(rawValue: 0x6)
    }

    package var identifier: Identifier
    package var value: UInt32

    package init(_ identifier: Identifier, _ value: UInt32) {
        self.identifier = identifier
        self.value = value
    }

    /// Refuses a value RFC 9113 §6.5.2 rules out; identifiers it does not define are accepted (and
    /// then ignored, §6.5.2). `fromServer`: a client must refuse SETTINGS_ENABLE_PUSH = 1 from a server.
    func validate(fromServer: Bool) throws(HTTP2ConnectionError) {
        switch self.identifier {
        case .enablePush:
            if self.value > 1 || (fromServer && self.value == 1) { throw .invalidSetting(self) }
        case .initialWindowSize:
            if self.value > UInt32(HTTP2.maxWindowSize) { throw .invalidSetting(self) }
        case .maxFrameSize:
            if self.value < UInt32(HTTP2.defaultMaxFrameSize) || self.value > UInt32(HTTP2.largestMaxFrameSize) {
                throw .invalidSetting(self)
            }
        default:
            break
        }
    }
}

/// The settings one endpoint has in force, starting from RFC 9113 §6.5.2's initial values.
package struct HTTP2Settings: Equatable, Sendable {
    package var headerTableSize = HTTP2.defaultHeaderTableSize
    package var enablePush = true
    /// nil: no limit (the initial value).
    package var maxConcurrentStreams: Int?
    package var initialWindowSize = HTTP2.defaultInitialWindowSize
    package var maxFrameSize = HTTP2.defaultMaxFrameSize
    /// nil: no limit (the initial value).
    package var maxHeaderListSize: Int?

    package init() {}

    /// Applies one validated parameter; unknown identifiers are ignored.
    package mutating func apply(_ setting: HTTP2Setting) {
        let value = Int(setting.value)
        switch setting.identifier {
        case .headerTableSize: self.headerTableSize = value
        case .enablePush: self.enablePush = value == 1
        case .maxConcurrentStreams: self.maxConcurrentStreams = value
        case .initialWindowSize: self.initialWindowSize = value
        case .maxFrameSize: self.maxFrameSize = value
        case .maxHeaderListSize: self.maxHeaderListSize = value
        default: break
        }
    }

    /// The parameters that differ from the initial values, to send in a SETTINGS frame.
    package var changedFromInitial: [HTTP2Setting] {
        let initial = HTTP2Settings()
        var settings: [HTTP2Setting] = []
        if self.headerTableSize != initial.headerTableSize {
            settings.append(HTTP2Setting(.headerTableSize, UInt32(self.headerTableSize)))
        }
        if self.enablePush != initial.enablePush { settings.append(HTTP2Setting(.enablePush, self.enablePush ? 1 : 0)) }
        if let streams = self.maxConcurrentStreams {
            settings.append(HTTP2Setting(.maxConcurrentStreams, UInt32(streams)))
        }
        if self.initialWindowSize != initial.initialWindowSize {
            settings.append(HTTP2Setting(.initialWindowSize, UInt32(self.initialWindowSize)))
        }
        if self.maxFrameSize != initial.maxFrameSize {
            settings.append(HTTP2Setting(.maxFrameSize, UInt32(self.maxFrameSize)))
        }
        if let size = self.maxHeaderListSize { settings.append(HTTP2Setting(.maxHeaderListSize, UInt32(size))) }
        return settings
    }
}
