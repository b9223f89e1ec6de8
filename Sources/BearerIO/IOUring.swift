import CBearerLinux
import Glibc

/// An io_uring instance (io_uring(7)) driven through the raw system calls: the submission and
/// completion rings mapped into this process, and one ring of provided buffers that multishot
/// receives fill.
///
/// Used by an event loop with `io = io_uring`: one `io_uring_enter` per loop turn submits what the
/// turn queued and waits for completions, and receives complete into the provided buffers without a
/// `read(2)` per arrival. Unsafe by nature (shared memory with the kernel); every pointer below points
/// into the mappings, which live as long as the instance. Confined to its loop.
package final class IOUring {
    let fd: Int32
    private let ringMemory: UnsafeMutableRawPointer
    private let ringSize: Int
    private let submissionEntries: UnsafeMutablePointer<io_uring_sqe>
    private let submissionEntriesSize: Int
    private let submissionHead: UnsafeMutablePointer<UInt32>
    private let submissionTail: UnsafeMutablePointer<UInt32>
    private let submissionMask: UInt32
    private let submissionCapacity: UInt32
    private let submissionArray: UnsafeMutablePointer<UInt32>
    private let completionHead: UnsafeMutablePointer<UInt32>
    private let completionTail: UnsafeMutablePointer<UInt32>
    private let completionMask: UInt32
    private let completions: UnsafeMutablePointer<io_uring_cqe>
    /// Entries filled since the last submission.
    private var queued: UInt32 = 0
    /// Requests submitted whose last completion has not come yet.
    private(set) var outstanding = 0
    /// How many times queued entries went to the kernel: an entry queued while this was N has not
    /// reached the kernel (which has not looked at its descriptor yet) while it still is.
    private(set) var batch: UInt64 = 0
    private var localTail: UInt32

    let buffers: ProvidedBuffers

    /// Why the kernel refused: io_uring missing, disabled (kernel.io_uring_disabled), or a feature
    /// this loop needs (multishot receive into provided buffers, waiting with a timeout) absent.
    package struct Unavailable: Error, CustomStringConvertible {
        package var description: String
    }

    package init(entries: UInt32 = 1024, bufferCount: UInt16 = 256, bufferSize: Int = 16 * 1024) throws(Unavailable) {
        var parameters = io_uring_params()
        parameters.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_CLAMP
        var fd = cbl_io_uring_setup(entries, &parameters)
        if fd < 0 && errno == EINVAL {
            // An older kernel without deferred task running: plain setup.
            parameters = io_uring_params()
            parameters.flags = IORING_SETUP_CLAMP
            fd = cbl_io_uring_setup(entries, &parameters)
        }
        guard fd >= 0 else { throw Unavailable(description: "io_uring_setup: \(String(cString: strerror(errno)))") }
        guard parameters.features & IORING_FEAT_SINGLE_MMAP != 0, parameters.features & IORING_FEAT_EXT_ARG != 0
        else {
            close(fd)
            throw Unavailable(description: "io_uring: this kernel lacks single-mmap rings or waiting with a timeout")
        }
        let submissionRingSize = Int(parameters.sq_off.array) + Int(parameters.sq_entries) * 4
        let completionRingSize =
            Int(parameters.cq_off.cqes) + Int(parameters.cq_entries) * MemoryLayout<io_uring_cqe>.stride
        let ringSize = max(submissionRingSize, completionRingSize)
        guard
            let ring = mmap(
                nil,
                ringSize,
                PROT_READ | PROT_WRITE,
                MAP_SHARED | MAP_POPULATE,
                fd,
                off_t(IORING_OFF_SQ_RING)
            ),
            ring != MAP_FAILED
        else {
            close(fd)
            throw Unavailable(description: "io_uring: cannot map the rings: \(String(cString: strerror(errno)))")
        }
        let entriesSize = Int(parameters.sq_entries) * MemoryLayout<io_uring_sqe>.stride
        guard
            let entriesMemory = mmap(
                nil,
                entriesSize,
                PROT_READ | PROT_WRITE,
                MAP_SHARED | MAP_POPULATE,
                fd,
                off_t(IORING_OFF_SQES)
            ),
            entriesMemory != MAP_FAILED
        else {
            munmap(ring, ringSize)
            close(fd)
            throw Unavailable(description: "io_uring: cannot map the submission entries")
        }
        self.fd = fd
        self.ringMemory = ring
        self.ringSize = ringSize
        self.submissionEntries = entriesMemory.bindMemory(to: io_uring_sqe.self, capacity: Int(parameters.sq_entries))
        self.submissionEntriesSize = entriesSize
        func field<T>(_ offset: UInt32, _ type: T.Type) -> UnsafeMutablePointer<T> {
            (ring + Int(offset)).assumingMemoryBound(to: T.self)
        }
        self.submissionHead = field(parameters.sq_off.head, UInt32.self)
        self.submissionTail = field(parameters.sq_off.tail, UInt32.self)
        self.submissionMask = field(parameters.sq_off.ring_mask, UInt32.self).pointee
        self.submissionCapacity = parameters.sq_entries
        self.submissionArray = field(parameters.sq_off.array, UInt32.self)
        self.completionHead = field(parameters.cq_off.head, UInt32.self)
        self.completionTail = field(parameters.cq_off.tail, UInt32.self)
        self.completionMask = field(parameters.cq_off.ring_mask, UInt32.self).pointee
        self.completions = field(parameters.cq_off.cqes, io_uring_cqe.self)
        self.localTail = self.submissionTail.pointee
        do throws(Unavailable) {
            self.buffers = try ProvidedBuffers(ring: fd, group: 0, count: bufferCount, size: bufferSize)
        } catch {
            munmap(entriesMemory, entriesSize)
            munmap(ring, ringSize)
            close(fd)
            throw error
        }
    }

    deinit {
        munmap(UnsafeMutableRawPointer(self.submissionEntries), self.submissionEntriesSize)
        munmap(self.ringMemory, self.ringSize)
        close(self.fd)
    }

    /// The next submission entry to fill; it goes to the kernel with the next `submit`.
    func nextEntry() -> UnsafeMutablePointer<io_uring_sqe> {
        if self.localTail &- cbl_load_acquire_u32(self.submissionHead) >= self.submissionCapacity {
            // Full: hand the queued entries over now.
            self.submit(waitingFor: 0, timeoutNanoseconds: nil)
        }
        let index = self.localTail & self.submissionMask
        self.submissionArray[Int(index)] = index
        self.localTail &+= 1
        self.queued += 1
        self.outstanding += 1
        return self.submissionEntries + Int(index)
    }

    /// Submits what is queued and waits, at most `timeoutNanoseconds` (nil: no bound), until
    /// `count` completions are there. An interrupted or timed-out wait is no error.
    func submit(waitingFor count: UInt32, timeoutNanoseconds: Int64?) {
        cbl_store_release_u32(self.submissionTail, self.localTail)
        let toSubmit = self.queued
        self.queued = 0
        if toSubmit > 0 { self.batch &+= 1 }
        guard count > 0 else {
            if toSubmit > 0 { _ = cbl_io_uring_enter(self.fd, toSubmit, 0, 0, nil, 0) }
            return
        }
        var timeout = __kernel_timespec()
        var arguments = io_uring_getevents_arg()
        if let nanoseconds = timeoutNanoseconds {
            timeout.tv_sec = nanoseconds / 1_000_000_000
            timeout.tv_nsec = nanoseconds % 1_000_000_000
        }
        withUnsafeMutablePointer(to: &timeout) { timeoutPointer in
            if timeoutNanoseconds != nil { arguments.ts = UInt64(UInt(bitPattern: timeoutPointer)) }
            _ = cbl_io_uring_enter(
                self.fd,
                toSubmit,
                count,
                IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG,
                &arguments,
                MemoryLayout<io_uring_getevents_arg>.size
            )
        }
    }

    /// Calls `body` with each completion that arrived (user data, result, flags), oldest first.
    func forEachCompletion(_ body: (UInt64, Int32, UInt32) -> Void) {
        var head = self.completionHead.pointee
        let tail = cbl_load_acquire_u32(self.completionTail)
        while head != tail {
            let completion = self.completions[Int(head & self.completionMask)]
            head &+= 1
            // Release the slot before running the body: the body may queue work that completes.
            cbl_store_release_u32(self.completionHead, head)
            if completion.flags & IORING_CQE_F_MORE == 0 { self.outstanding -= 1 }
            body(completion.user_data, completion.res, completion.flags)
        }
    }
}

/// A ring of buffers the kernel picks from for multishot receives (IORING_REGISTER_PBUF_RING): the
/// loop copies what a completion delivered into the connection's own buffer and gives the buffer back,
/// so idle connections hold no buffer of their own while a receive waits for them.
final class ProvidedBuffers {
    let group: UInt16
    let size: Int
    private let count: UInt16
    private let ring: UnsafeMutablePointer<io_uring_buf_ring>
    private let ringBytes: Int
    private let memory: UnsafeMutableRawPointer
    private var tail: UInt16 = 0
    private var returned: UInt16 = 0

    init(ring fd: Int32, group: UInt16, count: UInt16, size: Int) throws(IOUring.Unavailable) {
        precondition(count > 0 && count & (count - 1) == 0, "a provided-buffer ring has a power-of-two size")
        self.group = group
        self.size = size
        self.count = count
        self.ringBytes = Int(count) * MemoryLayout<io_uring_buf>.stride
        guard let ringMemory = mmap(nil, self.ringBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
            ringMemory != MAP_FAILED
        else { throw IOUring.Unavailable(description: "io_uring: cannot map a buffer ring") }
        self.ring = ringMemory.bindMemory(to: io_uring_buf_ring.self, capacity: 1)
        self.memory = UnsafeMutableRawPointer.allocate(byteCount: Int(count) * size, alignment: 4096)
        var registration = io_uring_buf_reg()
        registration.ring_addr = UInt64(UInt(bitPattern: ringMemory))
        registration.ring_entries = UInt32(count)
        registration.bgid = group
        guard cbl_io_uring_register(fd, UInt32(IORING_REGISTER_PBUF_RING), &registration, 1) == 0 else {
            let reason = String(cString: strerror(errno))
            munmap(ringMemory, self.ringBytes)
            self.memory.deallocate()
            throw IOUring.Unavailable(description: "io_uring: cannot register provided buffers: \(reason)")
        }
        for id in 0..<count { self.add(id) }
        self.publish()
    }

    deinit {
        munmap(UnsafeMutableRawPointer(self.ring), self.ringBytes)
        self.memory.deallocate()
    }

    /// The first `length` bytes of buffer `id`, as a completion filled them.
    func bytes(_ id: UInt16, length: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: self.memory + Int(id) * self.size, count: length)
    }

    /// Gives buffer `id` back; it reaches the kernel with the next `publish`.
    func recycle(_ id: UInt16) {
        self.add(id)
    }

    /// Hands the buffers given back since the last call to the kernel.
    func publish() {
        guard self.returned > 0 else { return }
        self.tail &+= self.returned
        self.returned = 0
        cbl_buffer_ring_publish(self.ring, self.tail)
    }

    private func add(_ id: UInt16) {
        cbl_buffer_ring_add(
            self.ring,
            self.count &- 1,
            self.tail,
            self.returned,
            self.memory + Int(id) * self.size,
            UInt32(self.size),
            id
        )
        self.returned &+= 1
    }
}

@available(*, unavailable)
extension IOUring: Sendable {}

@available(*, unavailable)
extension ProvidedBuffers: Sendable {}
