/* cputrain-run's lines over a connection (the rendezvous protocol is one
 * line per message) and a free port. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "run.h"

int send_line(int fd, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof line - 1)
        return -1;
    line[n++] = '\n';
    for (int at = 0; at < n;) {
        ssize_t w = send(fd, line + at, (size_t)(n - at), MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        at += (int)w;
    }
    return 0;
}

/* Reads what is there; *line gets the next whole line (without '\n') and
 * returns 1, 0 when none is whole yet, -1 at end of file or an error, -3
 * for a line longer than `size` (a peer speaking another protocol). */
int next_line(conn *c, char *line, size_t size, int do_read)
{
    char *nl;
    if (do_read) {
        ssize_t n = recv(c->fd, c->in + c->len, sizeof c->in - c->len, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            return -1;
        if (n > 0)
            c->len += (size_t)n;
    }
    if (!(nl = memchr(c->in, '\n', c->len)))
        return c->len == sizeof c->in ? -3 : 0;
    *nl = '\0';
    {
        size_t k = (size_t)(nl - c->in);
        if (k >= size)
            return -3; /* no message of ours is that long: not cut, refused */
        memcpy(line, c->in, k);
        line[k] = '\0';
    }
    c->len -= (size_t)(nl + 1 - c->in);
    memmove(c->in, nl + 1, c->len);
    return 1;
}

/* 1 when line is exactly `verb` and n decimal integers, each after one
 * space, as send_line wrote them (no sign but '-', no other spaces, no
 * overflow, nothing after); the caller checks each one's range. */
int parse_msg(const char *line, const char *verb, int n, long *v)
{
    size_t k = strlen(verb);
    const char *p = line + k;
    if (strncmp(line, verb, k) != 0)
        return 0;
    for (int i = 0; i < n; i++) {
        char *end;
        if (*p++ != ' ' || !(isdigit((unsigned char)*p) ||
                             (*p == '-' && isdigit((unsigned char)p[1]))))
            return 0;
        errno = 0;
        v[i] = strtol(p, &end, 10);
        if (errno != 0)
            return 0;
        p = end;
    }
    return *p == '\0';
}

/* A peer's bytes as they may go into our log: the first 60, anything but
 * printable ASCII shown as '?' (no terminal escapes from the network). */
const char *printable(const char *in, char out[64])
{
    int k = 0;
    for (; in[k] && k < 60; k++)
        out[k] = in[k] >= 0x20 && in[k] < 0x7f ? in[k] : '?';
    out[k] = '\0';
    return out;
}

/* A port free now on `addr` (network order: loopback for --standalone,
 * any address for a round's MASTER_PORT), 0 if none. */
int free_port(uint32_t addr)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;
    int fd = socket(AF_INET, SOCK_STREAM, 0), port = 0;
    if (fd < 0)
        return 0;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = addr;
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
        getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
        port = ntohs(sa.sin_port);
    close(fd);
    return port;
}
