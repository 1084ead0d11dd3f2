/* backends/worker/worker_config.c — where a worker's command comes from: --worker-cmd
 * text split without a shell, or a `key = value` config file (backends/worker/worker.h). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/worker/worker.h"

void af_worker_config_init(af_worker_config *cfg, const char *name) {
    memset(cfg, 0, sizeof *cfg);
    snprintf(cfg->name, sizeof cfg->name, "%s", name ? name : "");
    cfg->timeout_s = 60;
    cfg->start_timeout_s = 120;
    cfg->transport = AF_WORKER_TRANSPORT_AUTO;
}

void af_worker_config_free(af_worker_config *cfg) {
    for (int i = 0; i < cfg->argc; i++) free(cfg->argv[i]);
    memset(cfg->argv, 0, sizeof cfg->argv);
    cfg->argc = 0;
}

int af_worker_split_command(const char *text, af_worker_config *cfg, char *why, size_t cap) {
    af_worker_config_free(cfg);
    size_t n = strlen(text);
    char *word = malloc(n + 1);
    if (!word) {
        snprintf(why, cap, "worker command: out of memory");
        return -1;
    }
    const char *p = text;
    for (;;) {
        while (*p == ' ' || *p == '\t') p++;
        if (!*p) break;
        size_t len = 0;
        while (*p && *p != ' ' && *p != '\t') {
            if (*p == '\'' || *p == '"') {
                char quote = *p++;
                while (*p && *p != quote) word[len++] = *p++;
                if (!*p) {
                    snprintf(why, cap, "worker command: unterminated %c quote in '%s'", quote, text);
                    free(word);
                    af_worker_config_free(cfg);
                    return -1;
                }
                p++;
            } else {
                word[len++] = *p++;
            }
        }
        if (cfg->argc == AF_WORKER_MAX_ARGS) {
            snprintf(why, cap, "worker command: more than %d words in '%s'", AF_WORKER_MAX_ARGS, text);
            free(word);
            af_worker_config_free(cfg);
            return -1;
        }
        word[len] = '\0';
        cfg->argv[cfg->argc] = strdup(word);
        if (!cfg->argv[cfg->argc]) {
            snprintf(why, cap, "worker command: out of memory");
            free(word);
            af_worker_config_free(cfg);
            return -1;
        }
        cfg->argc++;
    }
    free(word);
    if (cfg->argc == 0) {
        snprintf(why, cap, "worker command is empty");
        return -1;
    }
    return 0;
}

/* Strip blanks at both ends in place; returns the start. */
static char *trim(char *s) {
    while (isspace((unsigned char)*s)) s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1])) s[--n] = '\0';
    return s;
}

static int parse_seconds(const char *v, double *out) {
    char *end = NULL;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || !(x > 0) || x > 86400) return -1;
    *out = x;
    return 0;
}

int af_worker_config_load(const char *path, const char *name, af_worker_config *cfg, char *why, size_t cap) {
    af_worker_config_init(cfg, name);
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(why, cap, "%s: cannot open worker config: %s", path, strerror(errno));
        return -1;
    }
    char line[4096];
    int lineno = 0, command_line = 0, rc = 0;
    bool seen_name = false, seen_timeout = false, seen_start = false, seen_transport = false;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        lineno++;
        if (!strchr(line, '\n') && !feof(f)) {
            snprintf(why, cap, "%s:%d: line longer than %zu characters", path, lineno, sizeof line - 2);
            rc = -1;
            break;
        }
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        char *s = trim(line);
        if (!*s) continue;
        char *eq = strchr(s, '=');
        if (!eq) {
            snprintf(why, cap, "%s:%d: expected 'key = value', got '%s'", path, lineno, s);
            rc = -1;
            break;
        }
        *eq = '\0';
        char *key = trim(s), *value = trim(eq + 1);
        bool *seen = NULL;
        if (!strcmp(key, "command")) {
            if (command_line) {
                snprintf(why, cap, "%s:%d: command: given twice (first at line %d)", path, lineno, command_line);
                rc = -1;
                break;
            }
            char sub[400];
            if (af_worker_split_command(value, cfg, sub, sizeof sub)) {
                snprintf(why, cap, "%s:%d: command: %s", path, lineno, sub);
                rc = -1;
                break;
            }
            command_line = lineno;
            continue;
        } else if (!strcmp(key, "name")) {
            seen = &seen_name;
            if (!*value || strpbrk(value, " \t:")) {
                snprintf(why, cap, "%s:%d: name: '%s' is empty or holds a blank or ':'", path, lineno, value);
                rc = -1;
                break;
            }
            snprintf(cfg->name, sizeof cfg->name, "%s", value);
        } else if (!strcmp(key, "timeout") || !strcmp(key, "start_timeout")) {
            bool start = key[0] == 's';
            seen = start ? &seen_start : &seen_timeout;
            if (parse_seconds(value, start ? &cfg->start_timeout_s : &cfg->timeout_s)) {
                snprintf(why, cap, "%s:%d: %s: '%s' is not a number of seconds in (0, 86400]", path, lineno, key,
                         value);
                rc = -1;
                break;
            }
        } else if (!strcmp(key, "transport")) {
            seen = &seen_transport;
            if (!strcmp(value, "auto"))
                cfg->transport = AF_WORKER_TRANSPORT_AUTO;
            else if (!strcmp(value, "shm"))
                cfg->transport = AF_WORKER_TRANSPORT_SHM;
            else if (!strcmp(value, "cuda_ipc"))
                cfg->transport = AF_WORKER_TRANSPORT_CUDA_IPC;
            else {
                snprintf(why, cap, "%s:%d: transport: '%s' is not auto, shm or cuda_ipc", path, lineno, value);
                rc = -1;
                break;
            }
        } else {
            snprintf(why, cap, "%s:%d: unknown key '%s' (command, name, timeout, start_timeout, transport)", path,
                     lineno, key);
            rc = -1;
            break;
        }
        if (*seen) {
            snprintf(why, cap, "%s:%d: %s: given twice", path, lineno, key);
            rc = -1;
            break;
        }
        *seen = true;
    }
    fclose(f);
    if (rc == 0 && !command_line) {
        snprintf(why, cap, "%s: no 'command = ...' line", path);
        rc = -1;
    }
    if (rc == 0 && !cfg->name[0]) {
        snprintf(why, cap, "%s: no 'name = ...' line and no worker:NAME backend to name it", path);
        rc = -1;
    }
    if (rc == 0) snprintf(cfg->origin, sizeof cfg->origin, "%s:%d", path, command_line);
    if (rc == 0) snprintf(cfg->config_path, sizeof cfg->config_path, "%s", path);
    if (rc) af_worker_config_free(cfg);
    return rc;
}

int af_worker_register(af_registry *r, const char *backend_name, const char *worker_cmd, const char *worker_config,
                       char *why, size_t cap) {
    if (!worker_cmd && !worker_config) return 0;
    const char *wanted = backend_name && !strncmp(backend_name, "worker:", 7) ? backend_name + 7 : "";
    af_worker_config cfg;
    if (worker_config) {
        if (af_worker_config_load(worker_config, wanted, &cfg, why, cap)) return -1;
    } else {
        if (!wanted[0]) {
            snprintf(why, cap, "--worker-cmd needs --backend worker:NAME to name the worker");
            return -1;
        }
        af_worker_config_init(&cfg, wanted);
        if (af_worker_split_command(worker_cmd, &cfg, why, cap)) return -1;
        snprintf(cfg.origin, sizeof cfg.origin, "--worker-cmd");
    }
    if (worker_cmd && strlen(worker_cmd) >= sizeof cfg.command_text) {
        snprintf(why, cap, "--worker-cmd: longer than %zu bytes", sizeof cfg.command_text - 1);
        af_worker_config_free(&cfg);
        return -1;
    }
    if (worker_cmd) snprintf(cfg.command_text, sizeof cfg.command_text, "%s", worker_cmd);
    if (worker_cmd && worker_config) {
        /* the config file's settings, the command line's command */
        char sub[400];
        if (af_worker_split_command(worker_cmd, &cfg, sub, sizeof sub)) {
            snprintf(why, cap, "%s", sub);
            af_worker_config_free(&cfg);
            return -1;
        }
        snprintf(cfg.origin, sizeof cfg.origin, "--worker-cmd");
    }
    return af_worker_register_config(r, &cfg, why, cap);
}

int af_worker_register_config(af_registry *r, af_worker_config *cfg, char *why, size_t cap) {
    af_backend *be = af_backend_worker_new(cfg);
    af_worker_config_free(cfg);
    if (!be) {
        snprintf(why, cap, "worker: out of memory");
        return -1;
    }
    if (af_registry_add(r, be) != 0) {
        snprintf(why, cap, "worker: the registry already holds %d backends", AF_REGISTRY_MAX);
        return -1;
    }
    return 0;
}
