/* hil link: UDP sockets of the loop. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "hil/link.h"

int hil_parse_address(const char *text, struct sockaddr_in *sa, char *err, size_t errlen)
{
    char host[64];
    const char *colon = strrchr(text, ':');
    memset(sa, 0, sizeof *sa);
    sa->sin_family = AF_INET;
    if (!colon || colon == text || (size_t)(colon - text) >= sizeof host) {
        snprintf(err, errlen, "--address '%s' is not HOST:PORT; give an IPv4 address and port, e.g. 10.0.0.2:9000.", text);
        return -1;
    }
    memcpy(host, text, (size_t)(colon - text));
    host[colon - text] = '\0';
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || end == colon + 1 || port < 0 || port > 65535 || inet_pton(AF_INET, host, &sa->sin_addr) != 1) {
        snprintf(err, errlen, "--address '%s' is not HOST:PORT with an IPv4 address and a port 0-65535; give e.g. 10.0.0.2:9000.", text);
        return -1;
    }
    sa->sin_port = htons((uint16_t)port);
    return 0;
}

int hil_bind(const struct sockaddr_in *sa, bool rx_timestamps, bool *got_ts, char *err, size_t errlen)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open a UDP socket (%s).", strerror(errno));
        return -1;
    }
    /* Room for a backlog of frames when the simulation falls behind: the
     * frames then wait (and count as late) rather than being dropped at once. */
    int buf = 1 << 20;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
    if (got_ts)
        *got_ts = false;
#if defined(SO_TIMESTAMPNS) && !defined(RTG_POSIX_ONLY)   /* the kernel's receive stamp is Linux-only */
    if (rx_timestamps) {
        int on = 1;
        if (setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on) == 0 && got_ts)
            *got_ts = true;
    }
#else
    (void)rx_timestamps;
#endif
    if (bind(fd, (const struct sockaddr *)sa, sizeof *sa) != 0) {
        char a[INET_ADDRSTRLEN] = "?";
        inet_ntop(AF_INET, &sa->sin_addr, a, sizeof a);
        snprintf(err, errlen, "cannot bind UDP %s:%u (%s); give a local address and a free port.", a,
                 ntohs(sa->sin_port), strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

int hil_connect(int fd, const struct sockaddr_in *to, char *err, size_t errlen)
{
    if (connect(fd, (const struct sockaddr *)to, sizeof *to) != 0) {
        snprintf(err, errlen, "cannot address the simulation (%s); check --address.", strerror(errno));
        return -1;
    }
    return 0;
}
