/* select/selector.c — policy and command selectors (selector.h). */
#include "select/selector.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backends/worker/worker.h"
#include "util/clock.h"
#include "util/proc.h"
#include "util/text.h"

int af_selector_open_argv(af_selector *s, char *const *argv, int argc, af_error *err) {
    memset(s, 0, sizeof *s);
    if (argc < 1 || argc > AF_SELECTOR_MAX_ARGS) {
        snprintf(err->file, sizeof err->file, "selector");
        err->line = 0;
        snprintf(err->field, sizeof err->field, "cmd");
        snprintf(err->message, sizeof err->message, "a selector command needs 1 to %d words (got %d)",
                 AF_SELECTOR_MAX_ARGS, argc);
        return -1;
    }
    int len = snprintf(s->label, sizeof s->label, "cmd:");
    for (int i = 0; i < argc; i++) {
        s->argv[i] = strdup(argv[i]);
        if (!s->argv[i]) {
            af_selector_close(s);
            return -1;
        }
        if (len > 0 && (size_t)len < sizeof s->label)
            len += snprintf(s->label + len, sizeof s->label - (size_t)len, "%s%s", i ? " " : "", argv[i]);
    }
    s->argc = argc;
    s->deadline_ms = AF_SELECTOR_DEADLINE_MS;
    return 0;
}

int af_selector_open(af_selector *s, const char *spec, af_error *err) {
    memset(s, 0, sizeof *s);
    if (!strncmp(spec, "cmd:", 4)) {
        af_worker_config cfg;
        af_worker_config_init(&cfg, "selector");
        char why[512];
        if (af_worker_split_command(spec + 4, &cfg, why, sizeof why) || cfg.argc == 0) {
            snprintf(err->file, sizeof err->file, "%s", spec);
            err->line = 0;
            snprintf(err->field, sizeof err->field, "cmd");
            snprintf(err->message, sizeof err->message, "%s", cfg.argc ? why : "no program named");
            af_worker_config_free(&cfg);
            return -1;
        }
        int rc = af_selector_open_argv(s, cfg.argv, cfg.argc, err);
        af_worker_config_free(&cfg);
        return rc;
    }
    s->policy = malloc(sizeof *s->policy);
    if (!s->policy) return -1;
    if (af_policy_load(spec, s->policy, err)) {
        free(s->policy);
        s->policy = NULL;
        return -1;
    }
    snprintf(s->label, sizeof s->label, "%s", spec);
    return 0;
}

void af_selector_close(af_selector *s) {
    free(s->policy);
    for (int i = 0; i < s->argc; i++) free(s->argv[i]);
    memset(s, 0, sizeof *s);
}

static bool backend_name_char(char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || strchr("_-.:/+=", ch);
}

int af_selector_parse_answer(const char *line, af_choice *out, char *why, size_t cap) {
    memset(out, 0, sizeof *out);
    out->chosen = -1;
    char shown[160];
    af_text_clean(line, shown, sizeof shown, AF_TEXT_ONE_LINE);
    if (!strncmp(line, "none:", 5)) {
        const char *r = line + 5;
        while (*r == ' ') r++;
        if (!*r) {
            snprintf(why, cap, "answered '%s' without a reason (expected 'none: REASON')", shown);
            return -1;
        }
        out->n_reasons = 1;
        snprintf(out->reasons[0].backend, sizeof out->reasons[0].backend, "(selector)");
        af_text_clean(r, out->reasons[0].reason, sizeof out->reasons[0].reason, AF_TEXT_ONE_LINE);
        return 0;
    }
    size_t n = strlen(line);
    bool ok = n > 0 && n < AF_NAME_MAX && strcmp(line, "none");
    for (size_t i = 0; ok && i < n; i++) ok = backend_name_char(line[i]);
    if (!ok) {
        snprintf(why, cap, "printed '%s' (expected one line: a backend name, or 'none: REASON')", shown);
        return -1;
    }
    out->served = true;
    snprintf(out->backend, sizeof out->backend, "%s", line);
    return 0;
}

/* The selector command's setup (util/proc.h): stdin and stdout from the pipes in user
 * (int[4]: in read, in write, out read, out write). */
static int stdio_to_pipes(void *user) {
    int *fd = user;
    if (dup2(fd[0], 0) < 0 || dup2(fd[3], 1) < 0) return -1;
    for (int i = 0; i < 4; i++) close(fd[i]);
    return 0;
}

/* Run the command: case text on stdin, up to 4 KiB of stdout back, within the
 * deadline. 0 with the first line in line, or -1 with why naming the command. */
static int run_command(const af_selector *s, const char *text, char *line, size_t line_cap, char *why, size_t cap) {
    int in[2], outp[2];
    if (pipe(in)) {
        snprintf(why, cap, "selector %s: pipe: %s", s->label, strerror(errno));
        return -1;
    }
    if (pipe(outp)) {
        close(in[0]);
        close(in[1]);
        snprintf(why, cap, "selector %s: pipe: %s", s->label, strerror(errno));
        return -1;
    }
    /* its own process group, dead with attnfuzz, an exec failure named (util/proc.h) */
    int pipes[4] = {in[0], in[1], outp[0], outp[1]};
    af_proc_opts po;
    memset(&po, 0, sizeof po);
    po.argv = s->argv;
    po.search_path = true;
    po.setup = stdio_to_pipes;
    po.setup_user = pipes;
    af_proc proc;
    if (af_proc_start(&proc, &po)) {
        snprintf(why, cap, "selector %s: fork: %s", s->label, strerror(errno));
        close(in[0]), close(in[1]), close(outp[0]), close(outp[1]);
        return -1;
    }
    close(in[0]);
    close(outp[1]);
    /* the case text is small (< 64 KiB, a pipe's buffer): write it all, then EOF */
    void (*old)(int) = signal(SIGPIPE, SIG_IGN);
    size_t n = strlen(text), off = 0;
    while (off < n) {
        ssize_t w = write(in[1], text + off, n - off);
        if (w <= 0) break;
        off += (size_t)w;
    }
    close(in[1]);
    signal(SIGPIPE, old);
    char buf[4096];
    size_t got = 0;
    double end = af_clock_mono() + s->deadline_ms / 1000.0;
    bool timed_out = false;
    for (;;) {
        int left = (int)((end - af_clock_mono()) * 1000);
        if (left <= 0) {
            timed_out = true;
            break;
        }
        struct pollfd pfd = {outp[0], POLLIN, 0};
        int pr = poll(&pfd, 1, left);
        if (pr < 0 && errno == EINTR) continue;
        if (pr <= 0) {
            timed_out = pr == 0;
            break;
        }
        ssize_t r = read(outp[0], buf + got, sizeof buf - 1 - got);
        if (r <= 0) break;
        got += (size_t)r;
        if (got == sizeof buf - 1) break;
    }
    close(outp[0]);
    buf[got] = 0;
    if (timed_out)
        af_proc_kill(&proc, 0, true);
    else
        af_proc_wait(&proc);
    int status = proc.wait_status;
    if (proc.exec_errno) {
        snprintf(why, cap, "selector %s: cannot start %s: %s", s->label, s->argv[0], strerror(proc.exec_errno));
        return -1;
    }
    if (timed_out) {
        snprintf(why, cap, "selector %s: no answer within %d ms (killed)", s->label, s->deadline_ms);
        return -1;
    }
    if (WIFSIGNALED(status)) {
        snprintf(why, cap, "selector %s: crashed (signal %d)", s->label, WTERMSIG(status));
        return -1;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status)) {
        snprintf(why, cap, "selector %s: exited with status %d", s->label, WEXITSTATUS(status));
        return -1;
    }
    char *nl = strchr(buf, '\n');
    if (!nl) {
        char shown[160];
        af_text_clean(buf, shown, sizeof shown, AF_TEXT_ONE_LINE);
        snprintf(why, cap,
                 "selector %s: printed '%s' with no complete line (expected a backend name or 'none: REASON')",
                 s->label, shown);
        return -1;
    }
    *nl = 0;
    if (nl[1]) {
        char shown[160];
        af_text_clean(nl + 1, shown, sizeof shown, AF_TEXT_ONE_LINE);
        snprintf(why, cap, "selector %s: printed more than one line (then '%s')", s->label, shown);
        return -1;
    }
    if (nl > buf && nl[-1] == '\r') nl[-1] = 0;
    snprintf(line, line_cap, "%s", buf);
    return 0;
}

int af_selector_choose(const af_selector *s, const af_case *c, const af_select_facts *f, af_choice *out, char *why,
                       size_t cap) {
    if (s->policy) {
        af_policy_choose(s->policy, c, f, out);
        return 0;
    }
    char text[16384];
    size_t need = af_case_print(c, text, sizeof text);
    if (need >= sizeof text) {
        snprintf(why, cap, "selector %s: case text over %zu bytes", s->label, sizeof text);
        return -1;
    }
    char line[1024];
    if (run_command(s, text, line, sizeof line, why, cap)) return -1;
    char w[512];
    if (af_selector_parse_answer(line, out, w, sizeof w)) {
        snprintf(why, cap, "selector %s: %s", s->label, w);
        return -1;
    }
    return 0;
}
