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

#endif
