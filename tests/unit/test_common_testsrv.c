/* Unit tests: lib/common/testsrv.c, spoken to over a raw socket */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/testsrv.h"

static int dial(struct sr_testsrv *s)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	sa.sin_port = htons((uint16_t)sr_testsrv_port(s));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

/* Send raw request text; read the whole reply (Connection: close). */
static void exchange(struct sr_testsrv *s, const char *req, char *out, size_t n)
{
	int fd = dial(s);
	size_t len = 0;
	ssize_t r;

	assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	for (;;) {
		r = read(fd, out + len, n - 1 - len);
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	out[len] = '\0';
	close(fd);
}

static void test_chunked_body_and_record(void **state)
{
	struct sr_testsrv *s = sr_testsrv_start(0);
	const struct sr_testsrv_req *q;
	char resp[4096], v[64];

	(void)state;
	assert_non_null(s);
	assert_memory_equal(sr_testsrv_url(s), "http://127.0.0.1:", 17);
	assert_int_equal(sr_testsrv_reply(s, "POST", "/up", 200, "text/plain", "got it", 0), 0);
	exchange(s, "POST /up?a=b&c=%2F HTTP/1.1\r\nHost: x\r\nX-Mixed-Case: Yes\r\n"
		    "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
		    "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", resp, sizeof(resp));
	assert_memory_equal(resp, "HTTP/1.1 200", 12);
	assert_non_null(strstr(resp, "Content-Type: text/plain"));
	assert_non_null(strstr(resp, "\r\n\r\ngot it"));

	assert_int_equal(sr_testsrv_nreq(s), 1);
	q = sr_testsrv_req(s, 0);
	assert_string_equal(q->method, "POST");
	assert_string_equal(q->path, "/up");
	assert_string_equal(q->query, "a=b&c=%2F");
	assert_int_equal(q->body_len, 11);
	assert_string_equal(q->body, "hello world");
	assert_non_null(strstr(q->headers, "x-mixed-case: Yes\n"));
	assert_int_equal(sr_testsrv_req_header(q, "X-MIXED-CASE", v, sizeof(v)), 0);
	assert_string_equal(v, "Yes");
	/* truncating copy */
	assert_int_equal(sr_testsrv_req_header(q, "x-mixed-case", v, 2), 0);
	assert_string_equal(v, "Y");
	assert_int_equal(sr_testsrv_count(s, "POST", "/up"), 1);
	assert_int_equal(sr_testsrv_count(s, "GET", "/up"), 0);

	/* same path, other method: not routed -> 404 */
	exchange(s, "GET /up HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
		 resp, sizeof(resp));
	assert_memory_equal(resp, "HTTP/1.1 404", 12);
	assert_int_equal(sr_testsrv_nreq(s), 2);
	sr_testsrv_stop(s);
}

static void test_stop_with_request_in_flight(void **state)
{
	struct sr_testsrv *s = sr_testsrv_start(0);
	int fd;

	(void)state;
	assert_non_null(s);
	sr_testsrv_reply(s, "GET", "/hang", 200, NULL, "x", 600000);
	fd = dial(s);
	assert_true(write(fd, "GET /hang HTTP/1.1\r\nHost: x\r\n\r\n", 31) == 31);
	while (sr_testsrv_nreq(s) == 0)
		usleep(1000);
	/* must not wait out the 10-minute delay */
	sr_testsrv_stop(s);
	close(fd);
}

static void test_two_servers_distinct_ports(void **state)
{
	struct sr_testsrv *a = sr_testsrv_start(0), *b = sr_testsrv_start(0);

	(void)state;
	assert_non_null(a);
	assert_non_null(b);
	assert_int_not_equal(sr_testsrv_port(a), sr_testsrv_port(b));
	/* a busy fixed port fails cleanly */
	assert_null(sr_testsrv_start(sr_testsrv_port(a)));
	sr_testsrv_stop(a);
	sr_testsrv_stop(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chunked_body_and_record),
		cmocka_unit_test(test_stop_with_request_in_flight),
		cmocka_unit_test(test_two_servers_distinct_ports),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
