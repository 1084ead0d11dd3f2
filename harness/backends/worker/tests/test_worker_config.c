/* test_worker_config.c — the worker's command: split without a shell, config files whose
 * every error names FILE:LINE and the key, and registration refusing a nameless command. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/worker/worker.h"
#include "util/check.h"

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fputs(text, f);
    fclose(f);
}

/* Loading text must fail with a message containing want. */
static void expect_error(const char *path, const char *text, const char *want) {
    write_file(path, text);
    af_worker_config cfg;
    char why[512] = "";
    CHECK_MSG(af_worker_config_load(path, "w", &cfg, why, sizeof why) == -1, "accepted: %s", text);
    CHECK_MSG(strstr(why, want) != NULL, "message '%s' lacks '%s'", why, want);
}

int main(void) {
    af_worker_config cfg;
    char why[512];
    af_worker_config_init(&cfg, "x");
    CHECK(af_worker_split_command("python3  -m 'a b' \"c d\"e", &cfg, why, sizeof why) == 0);
    CHECK(cfg.argc == 4);
    CHECK(!strcmp(cfg.argv[0], "python3") && !strcmp(cfg.argv[1], "-m"));
    CHECK(!strcmp(cfg.argv[2], "a b") && !strcmp(cfg.argv[3], "c de"));
    CHECK(cfg.argv[4] == NULL);
    CHECK(af_worker_split_command("python3 'open", &cfg, why, sizeof why) == -1);
    CHECK(strstr(why, "unterminated ' quote") != NULL);
    CHECK(af_worker_split_command("   ", &cfg, why, sizeof why) == -1);
    CHECK(strstr(why, "empty") != NULL);
    af_worker_config_free(&cfg);

    char path[] = "/tmp/test_worker_config_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    write_file(path, "# a worker\ncommand = python3 -m mod --flag  # comment\nname = torch-sdpa\ntimeout = 2.5\n"
                     "start_timeout = 30\ntransport = shm\n");
    CHECK(af_worker_config_load(path, "ignored", &cfg, why, sizeof why) == 0);
    CHECK(!strcmp(cfg.name, "torch-sdpa"));
    CHECK(cfg.argc == 4 && !strcmp(cfg.argv[3], "--flag"));
    CHECK(cfg.timeout_s == 2.5 && cfg.start_timeout_s == 30 && cfg.transport == AF_WORKER_TRANSPORT_SHM);
    char want_origin[600];
    snprintf(want_origin, sizeof want_origin, "%s:2", path);
    CHECK(!strcmp(cfg.origin, want_origin));
    af_worker_config_free(&cfg);

    expect_error(path, "command = a\ntimeout = soon\n", ":2: timeout: 'soon' is not a number");
    expect_error(path, "command = a\ntimeout = -1\n", ":2: timeout: '-1'");
    expect_error(path, "command = a\ncommand = b\n", ":2: command: given twice (first at line 1)");
    expect_error(path, "command = a\ncolour = red\n", ":2: unknown key 'colour'");
    expect_error(path, "command = a\ntransport = pigeon\n", ":2: transport: 'pigeon' is not auto, shm or cuda_ipc");
    expect_error(path, "just words\n", ":1: expected 'key = value'");
    expect_error(path, "name = x\n", "no 'command = ...' line");
    expect_error(path, "command = 'a\n", ":1: command: worker command: unterminated");
    expect_error(path, "command = a\nname = a:b\n", ":2: name: 'a:b'");
    expect_error(path, "command = a\ntimeout = 1\ntimeout = 2\n", ":3: timeout: given twice");
    unlink(path);
    CHECK(af_worker_config_load(path, "w", &cfg, why, sizeof why) == -1);
    CHECK(strstr(why, "cannot open worker config") != NULL);

    /* registration: --worker-cmd needs a worker:NAME backend; nothing given does nothing */
    af_registry reg;
    memset(&reg, 0, sizeof reg);
    CHECK(af_worker_register(&reg, "cpu", "python3 x.py", NULL, why, sizeof why) == -1);
    CHECK(strstr(why, "--worker-cmd needs --backend worker:NAME") != NULL);
    CHECK(af_worker_register(&reg, "worker:w", NULL, NULL, why, sizeof why) == 0 && reg.count == 0);
    CHECK(af_worker_register(&reg, "worker:w", "python3 x.py", NULL, why, sizeof why) == 0 && reg.count == 1);
    CHECK(!strcmp(reg.items[0]->name, "worker:w"));
    af_registry_free(&reg); /* never started: destroying starts nothing */
    CHECK_DONE("test_worker_config");
}
