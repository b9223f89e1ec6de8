// One-line forwards to libc functions that need _GNU_SOURCE.
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <spawn.h>
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>
#include "CBearerLinux.h"

int cbl_eventfd(void) { return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK); }
int cbl_accept4(int fd, struct sockaddr *addr, socklen_t *len) { return accept4(fd, addr, len, SOCK_NONBLOCK | SOCK_CLOEXEC); }
int cbl_socket(int domain, int type) { return socket(domain, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0); }
int cbl_pipe_cloexec(int fds[2]) { return pipe2(fds, O_CLOEXEC); }
int cbl_set_thread_name(const char *name) { return pthread_setname_np(pthread_self(), name); }
int cbl_cpu_count(void) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) != 0) return 0;
    return CPU_COUNT(&set);
}
int cbl_spawn_add_chdir(posix_spawn_file_actions_t *actions, const char *path) {
    return posix_spawn_file_actions_addchdir_np(actions, path);
}

int cbl_spawn_add_closefrom(posix_spawn_file_actions_t *actions, int lowest) {
    return posix_spawn_file_actions_addclosefrom_np(actions, lowest);
}
int cbl_peer_credentials(int fd, int32_t *pid, uint32_t *uid) {
    struct ucred credentials;
    socklen_t length = sizeof(credentials);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) return -1;
    *pid = credentials.pid;
    *uid = credentials.uid;
    return 0;
}
