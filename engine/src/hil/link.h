/* hil link: the UDP sockets of the hardware-in-the-loop loop. */
#ifndef RTG_HIL_LINK_H
#define RTG_HIL_LINK_H
#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>

/* Each returns an fd (hil_bind, hil_connect: 0) or -1 with a sentence in err. */
int hil_parse_address(const char *text, struct sockaddr_in *sa, char *err, size_t errlen);
int hil_bind(const struct sockaddr_in *sa, bool rx_timestamps, bool *got_ts, char *err, size_t errlen);
int hil_connect(int fd, const struct sockaddr_in *to, char *err, size_t errlen);

#endif
