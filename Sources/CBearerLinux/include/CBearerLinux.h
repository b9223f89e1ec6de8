// What Glibc's Swift module does not export: epoll, eventfd, accept4, pipe2, thread names, CPU affinity,
// a spawned child's working directory and closed descriptors,
// and a few constants as values. Every function is a one-line forward to libc; no logic lives here.
#ifndef C_BEARER_LINUX_H
#define C_BEARER_LINUX_H

#include <sys/epoll.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stddef.h>
#include <spawn.h>

static inline int cbl_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }
static inline int cbl_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data) {
    struct epoll_event event;
    event.events = events;
    event.data.u64 = data;
    return epoll_ctl(epfd, op, fd, &event);
}
static inline int cbl_epoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout) {
    return epoll_wait(epfd, events, maxevents, timeout);
}
static inline uint32_t cbl_epoll_event_events(const struct epoll_event *event) { return event->events; }
static inline uint64_t cbl_epoll_event_data(const struct epoll_event *event) { return event->data.u64; }
static inline size_t cbl_epoll_event_size(void) { return sizeof(struct epoll_event); }

static const uint32_t CBL_EPOLLIN = EPOLLIN;
static const uint32_t CBL_EPOLLOUT = EPOLLOUT;
static const uint32_t CBL_EPOLLERR = EPOLLERR;
static const uint32_t CBL_EPOLLHUP = EPOLLHUP;
static const uint32_t CBL_EPOLLRDHUP = EPOLLRDHUP;
static const uint32_t CBL_EPOLLEXCLUSIVE = EPOLLEXCLUSIVE;
static const int CBL_EPOLL_CTL_ADD = EPOLL_CTL_ADD;
static const int CBL_EPOLL_CTL_MOD = EPOLL_CTL_MOD;
static const int CBL_EPOLL_CTL_DEL = EPOLL_CTL_DEL;

static const int CBL_SOCK_STREAM = SOCK_STREAM;
static const int CBL_MSG_NOSIGNAL = MSG_NOSIGNAL;
static const int CBL_TCP_NODELAY = TCP_NODELAY;
static const int CBL_IPPROTO_TCP = IPPROTO_TCP;
static const int CBL_SHUT_WR = SHUT_WR;

// io_uring (the `io = io_uring` event loop): the three system calls, the ring's memory-ordered loads
// and stores, and filling a submission entry (its unions do not import into Swift). Field fills only.
#include <linux/io_uring.h>
#include <sys/syscall.h>
#include <string.h>
#include <unistd.h>

static inline int cbl_io_uring_setup(unsigned entries, struct io_uring_params *params) {
    return (int)syscall(__NR_io_uring_setup, entries, params);
}
static inline int cbl_io_uring_enter(int fd, unsigned to_submit, unsigned min_complete, unsigned flags,
                                     const void *arg, size_t arg_size) {
    return (int)syscall(__NR_io_uring_enter, fd, to_submit, min_complete, flags, arg, arg_size);
}
static inline int cbl_io_uring_register(int fd, unsigned opcode, void *arg, unsigned count) {
    return (int)syscall(__NR_io_uring_register, fd, opcode, arg, count);
}
static inline uint32_t cbl_load_acquire_u32(const uint32_t *address) { return __atomic_load_n(address, __ATOMIC_ACQUIRE); }
static inline void cbl_store_release_u32(uint32_t *address, uint32_t value) { __atomic_store_n(address, value, __ATOMIC_RELEASE); }

/// Clears `sqe` and sets what every request has: the operation, its descriptor and its user data.
static inline void cbl_sqe_prepare(struct io_uring_sqe *sqe, uint8_t opcode, int fd, uint64_t user_data) {
    memset(sqe, 0, sizeof(*sqe));
    sqe->opcode = opcode;
    sqe->fd = fd;
    sqe->user_data = user_data;
}
/// A multishot receive into buffers the kernel takes from `group`.
static inline void cbl_sqe_recv_multishot(struct io_uring_sqe *sqe, int fd, uint16_t group, uint64_t user_data) {
    cbl_sqe_prepare(sqe, IORING_OP_RECV, fd, user_data);
    sqe->ioprio = IORING_RECV_MULTISHOT;
    sqe->flags = IOSQE_BUFFER_SELECT;
    sqe->buf_group = group;
}
/// A multishot poll for `events` (POLLIN …) on `fd`.
static inline void cbl_sqe_poll_multishot(struct io_uring_sqe *sqe, int fd, uint32_t events, uint64_t user_data) {
    cbl_sqe_prepare(sqe, IORING_OP_POLL_ADD, fd, user_data);
    sqe->poll32_events = events;
    sqe->len = IORING_POLL_ADD_MULTI;
}
/// Sends `length` bytes at `address` (MSG_NOSIGNAL: a closed peer is an error, not a signal).
static inline void cbl_sqe_send(struct io_uring_sqe *sqe, int fd, const void *address, uint32_t length,
                                uint64_t user_data) {
    cbl_sqe_prepare(sqe, IORING_OP_SEND, fd, user_data);
    sqe->addr = (uint64_t)(uintptr_t)address;
    sqe->len = length;
    sqe->msg_flags = MSG_NOSIGNAL;
}
/// Cancels every request still running (a stopping loop).
static inline void cbl_sqe_cancel_all(struct io_uring_sqe *sqe, uint64_t user_data) {
    cbl_sqe_prepare(sqe, IORING_OP_ASYNC_CANCEL, -1, user_data);
    sqe->cancel_flags = IORING_ASYNC_CANCEL_ANY;
}
/// Cancels the request submitted with `target`.
static inline void cbl_sqe_cancel(struct io_uring_sqe *sqe, uint64_t target, uint64_t user_data) {
    cbl_sqe_prepare(sqe, IORING_OP_ASYNC_CANCEL, -1, user_data);
    sqe->addr = target;
}
/// Puts buffer `id` (`length` bytes at `address`) into slot `tail + offset` of a provided-buffer ring.
static inline void cbl_buffer_ring_add(struct io_uring_buf_ring *ring, uint16_t mask, uint16_t tail, uint16_t offset,
                                       void *address, uint32_t length, uint16_t id) {
    struct io_uring_buf *buffer = &ring->bufs[(uint16_t)(tail + offset) & mask];
    buffer->addr = (uint64_t)(uintptr_t)address;
    buffer->len = length;
    buffer->bid = id;
}
/// Hands the buffers added so far to the kernel.
static inline void cbl_buffer_ring_publish(struct io_uring_buf_ring *ring, uint16_t tail) {
    __atomic_store_n(&ring->tail, tail, __ATOMIC_RELEASE);
}

// pidfd_open(2) (Linux 5.3): a descriptor that turns readable when the process ends, so a wait for a
// child's end is a poll with a deadline. Called through syscall(2): glibc before 2.36 has no wrapper.
#ifndef __NR_pidfd_open
#define __NR_pidfd_open 434
#endif
static inline int cbl_pidfd_open(pid_t pid) { return (int)syscall(__NR_pidfd_open, pid, 0); }

// Defined in shim.c, which needs _GNU_SOURCE (defining it here would clash with Glibc's module).
int cbl_eventfd(void);
int cbl_accept4(int fd, struct sockaddr *addr, socklen_t *len);
int cbl_socket(int domain, int type);
int cbl_pipe_cloexec(int fds[2]);
int cbl_set_thread_name(const char *name);
int cbl_cpu_count(void);
/// The child of `posix_spawn` starts in `path` (glibc 2.29's posix_spawn_file_actions_addchdir_np).
int cbl_spawn_add_chdir(posix_spawn_file_actions_t *actions, const char *path);
/// The child of `posix_spawn` closes every descriptor from `lowest` on (glibc 2.34's
/// posix_spawn_file_actions_addclosefrom_np), after the dup2s onto 0, 1 and 2.
int cbl_spawn_add_closefrom(posix_spawn_file_actions_t *actions, int lowest);
/// The process at the other end of unix socket `fd` when it connected (SO_PEERCRED): 0, or -1.
int cbl_peer_credentials(int fd, int32_t *pid, uint32_t *uid);

#endif
