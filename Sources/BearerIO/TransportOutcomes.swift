/// What the transport made of the peer's bytes, for the connection to act on (a failure is thrown).
enum ReceiveOutcome: Equatable {
    /// Nothing for the owner now (the socket had nothing; a handshake wants more).
    case nothing
    /// The owner has bytes in `inbound`.
    case bytes
    /// The peer's end, after every byte before it.
    case end
    /// The transport's handshake completed: the owner's bytes flow from now on.
    case established
}

/// What a read did.
enum ReadProgress: Equatable {
    case bytes(Int)
    /// The peer's end of the stream.
    case end
    case wouldBlock

    var outcome: ReceiveOutcome {
        switch self {
        case .bytes: .bytes
        case .end: .end
        case .wouldBlock: .nothing
        }
    }
}

/// What a ring send's completion means for the connection.
enum SendCompletion: Equatable {
    /// Part of the buffer went; the rest is on its way.
    case resent
    case waitsForWritable
    /// All of it went: the connection may hand over what it buffered meanwhile.
    case drained
}
