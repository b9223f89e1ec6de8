import BearerCore
import COpenSSL

/// An OpenSSL BIO whose reads take from a `TLSConnection`'s `received` buffer and whose writes
/// append to its `produced` buffer: how TLS runs over a transport it does not own.
///
/// A memory BIO pair would do the same with one more copy each way (into the BIO's own buffer and
/// out again); this one reads and writes the connection's buffers in place. An empty `received`
/// is "ask again later" (retry), unless the peer's end arrived, which is the end of the stream.
enum TLSBufferBIO {
    /// One method table for every BIO of the process, made once (OpenSSL reads it from any thread).
    nonisolated(unsafe) private static let method: OpaquePointer = {
        guard let method = BIO_meth_new(BIO_get_new_index() | COS_BIO_TYPE_SOURCE_SINK, "bearer-proxy stream")
        else { preconditionFailure("BIO_meth_new failed") }
        BIO_meth_set_read(method, read)
        BIO_meth_set_write(method, write)
        BIO_meth_set_ctrl(method, control)
        BIO_meth_set_create(method) { bio in
            BIO_set_init(bio, 1)
            return 1
        }
        return method
    }()

    /// Gives `ssl` a BIO over `owner`'s buffers, for reading and writing.
    ///
    /// The BIO points at its owner without a reference: the owner holds the `SSL`, which holds the
    /// BIO, so the BIO never outlives the owner.
    static func attach(to ssl: OpaquePointer, owner: TLSConnection) {
        guard let bio = BIO_new(Self.method) else { preconditionFailure("BIO_new failed") }
        BIO_set_data(bio, Unmanaged.passUnretained(owner).toOpaque())
        // The same BIO both ways: SSL_set_bio takes the one reference.
        SSL_set_bio(ssl, bio, bio)
    }

    private static func owner(_ bio: OpaquePointer?) -> TLSConnection {
        Unmanaged<TLSConnection>.fromOpaque(BIO_get_data(bio)!).takeUnretainedValue()
    }

    private static let read: @convention(c) (OpaquePointer?, UnsafeMutablePointer<CChar>?, Int32) -> Int32 = {
        bio,
        destination,
        length in
        cos_bio_clear_retry_flags(bio)
        let owner = TLSBufferBIO.owner(bio)
        let count = min(Int(length), owner.received.readableBytes)
        guard count > 0 else {
            if owner.hasReceivedEnd { return 0 }
            cos_bio_set_retry_read(bio)
            return -1
        }
        owner.received.withUnsafeReadableBytes { bytes in
            UnsafeMutableRawPointer(destination!).copyMemory(from: bytes.baseAddress!, byteCount: count)
        }
        owner.received.moveReaderIndex(forwardBy: count)
        return Int32(count)
    }

    private static let write: @convention(c) (OpaquePointer?, UnsafePointer<CChar>?, Int32) -> Int32 = {
        bio,
        source,
        length in
        cos_bio_clear_retry_flags(bio)
        guard length > 0, let source else { return 0 }
        TLSBufferBIO.owner(bio).produced.writeBytes(UnsafeRawBufferPointer(start: source, count: Int(length)))
        return length
    }

    private static let control: @convention(c) (OpaquePointer?, Int32, Int, UnsafeMutableRawPointer?) -> Int = {
        _,
        command,
        _,
        _ in
        // A flush has nothing to do (the stream sends `produced`); every other control is unsupported.
        command == COS_BIO_CTRL_FLUSH ? 1 : 0
    }
}
