// What Glibc's Swift module does not export: epoll, eventfd, accept4, pipe2, thread names, CPU affinity,
// and a few constants as values. Every function is a one-line forward to libc; no logic lives here.
#ifndef C_BEARER_LINUX_H
#define C_BEARER_LINUX_H

#include <sys/epoll.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stddef.h>

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

// Defined in shim.c, which needs _GNU_SOURCE (defining it here would clash with Glibc's module).
int cbl_eventfd(void);
int cbl_accept4(int fd, struct sockaddr *addr, socklen_t *len);
int cbl_socket(int domain, int type);
int cbl_pipe_cloexec(int fds[2]);
int cbl_set_thread_name(const char *name);
int cbl_cpu_count(void);

#endif
