#ifndef CCURL_SHIM_H
#define CCURL_SHIM_H

#include <curl/curl.h>

// libcurl's option setters are variadic C functions, which Swift cannot call.
// These typed wrappers forward to them.

static inline CURLcode ccurl_easy_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_easy_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_easy_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_easy_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}

typedef size_t (*ccurl_data_callback)(char *buffer, size_t size, size_t nitems, void *userdata);
typedef int (*ccurl_xferinfo_callback)(void *userdata, curl_off_t dltotal, curl_off_t dlnow,
                                       curl_off_t ultotal, curl_off_t ulnow);

static inline CURLcode ccurl_easy_setopt_data_callback(CURL *handle, CURLoption option, ccurl_data_callback cb) {
    return curl_easy_setopt(handle, option, cb);
}

static inline CURLcode ccurl_easy_setopt_xferinfo_callback(CURL *handle, ccurl_xferinfo_callback cb) {
    return curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, cb);
}

static inline CURLcode ccurl_easy_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode ccurl_easy_getinfo_pointer(CURL *handle, CURLINFO info, void **value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLMcode ccurl_multi_setopt_long(CURLM *handle, CURLMoption option, long value) {
    return curl_multi_setopt(handle, option, value);
}

/// The easy handle and result of a finished transfer, or NULL handle when none is left.
static inline CURL *ccurl_multi_next_done(CURLM *multi, CURLcode *result) {
    int remaining = 0;
    CURLMsg *msg;
    while ((msg = curl_multi_info_read(multi, &remaining)) != NULL) {
        if (msg->msg == CURLMSG_DONE) {
            *result = msg->data.result;
            return msg->easy_handle;
        }
    }
    return NULL;
}

// ---------------------------------------------------------------------------------------------------------------
// An event loop on libcurl's socket interface (curl_multi_socket_action) and epoll: each wake-up costs in proportion to
// the sockets that are ready, not to every transfer held (curl_multi_perform and curl_multi_poll walk them all, which
// with thousands of long-lived event streams made every delivery pay for every stream).

#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <errno.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    int epfd;
    int wakefd;
    long long deadline_ms;  // libcurl's timer: when to call socket_action(CURL_SOCKET_TIMEOUT); -1 = none
} ccurl_loop;

static inline long long ccurl_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int ccurl_socket_cb(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp) {
    (void)easy; (void)socketp;
    ccurl_loop *loop = (ccurl_loop *)userp;
    if (what == CURL_POLL_REMOVE) {
        epoll_ctl(loop->epfd, EPOLL_CTL_DEL, s, NULL);
        return 0;
    }
    struct epoll_event ev;
    ev.events = ((what & CURL_POLL_IN) ? EPOLLIN : 0) | ((what & CURL_POLL_OUT) ? EPOLLOUT : 0);
    ev.data.u64 = 0;
    ev.data.fd = s;
    if (epoll_ctl(loop->epfd, EPOLL_CTL_MOD, s, &ev) != 0 && errno == ENOENT) {
        epoll_ctl(loop->epfd, EPOLL_CTL_ADD, s, &ev);
    }
    return 0;
}

static int ccurl_timer_cb(CURLM *multi, long timeout_ms, void *userp) {
    (void)multi;
    ccurl_loop *loop = (ccurl_loop *)userp;
    loop->deadline_ms = timeout_ms < 0 ? -1 : ccurl_now_ms() + timeout_ms;
    return 0;
}

/// Sets up `loop` (epoll and a wake-up eventfd) and hands libcurl its socket and timer callbacks. 0 on success.
static inline int ccurl_loop_init(CURLM *multi, ccurl_loop *loop) {
    loop->epfd = epoll_create1(EPOLL_CLOEXEC);
    loop->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    loop->deadline_ms = -1;
    if (loop->epfd < 0 || loop->wakefd < 0) return -1;
    struct epoll_event ev;
    ev.events = EPOLLIN;
    ev.data.u64 = 0;
    ev.data.fd = loop->wakefd;
    if (epoll_ctl(loop->epfd, EPOLL_CTL_ADD, loop->wakefd, &ev) != 0) return -1;
    curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, ccurl_socket_cb);
    curl_multi_setopt(multi, CURLMOPT_SOCKETDATA, loop);
    curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, ccurl_timer_cb);
    curl_multi_setopt(multi, CURLMOPT_TIMERDATA, loop);
    return 0;
}

/// Wakes the loop from any thread.
static inline void ccurl_loop_wake(ccurl_loop *loop) {
    uint64_t one = 1;
    ssize_t n = write(loop->wakefd, &one, sizeof one);
    (void)n;
}

static inline void ccurl_loop_close(ccurl_loop *loop) {
    if (loop->epfd >= 0) close(loop->epfd);
    if (loop->wakefd >= 0) close(loop->wakefd);
}

/// Waits up to `max_wait_ms` for ready sockets, libcurl's timer or a wake-up, and lets libcurl act on each.
static inline void ccurl_loop_step(CURLM *multi, ccurl_loop *loop, int max_wait_ms) {
    enum { MAX_EVENTS = 512 };
    struct epoll_event events[MAX_EVENTS];
    int wait = max_wait_ms;
    if (loop->deadline_ms >= 0) {
        long long left = loop->deadline_ms - ccurl_now_ms();
        if (left < 0) left = 0;
        if (left < wait) wait = (int)left;
    }
    int n = epoll_wait(loop->epfd, events, MAX_EVENTS, wait);
    int running = 0;
    for (int i = 0; i < n; i++) {
        int fd = events[i].data.fd;
        if (fd == loop->wakefd) {
            uint64_t value;
            ssize_t r = read(loop->wakefd, &value, sizeof value);
            (void)r;
            continue;
        }
        int flags = 0;
        if (events[i].events & EPOLLIN) flags |= CURL_CSELECT_IN;
        if (events[i].events & EPOLLOUT) flags |= CURL_CSELECT_OUT;
        if (events[i].events & (EPOLLERR | EPOLLHUP)) flags |= CURL_CSELECT_ERR;
        curl_multi_socket_action(multi, fd, flags, &running);
    }
    if (loop->deadline_ms >= 0 && ccurl_now_ms() >= loop->deadline_ms) {
        loop->deadline_ms = -1;
        curl_multi_socket_action(multi, CURL_SOCKET_TIMEOUT, 0, &running);
    }
}

#endif
