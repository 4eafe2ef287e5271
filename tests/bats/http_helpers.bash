# shellcheck shell=bash
# Helpers for the black-box suites of bufferlock's HTTP store (cache_http*.bats):
# one nginx with WebDAV per bats file, a throwaway CA for its https port, and a
# python3 server that breaks bodies (tests/tools/http_fault_server.py).
#
#   load http_helpers                     # loads tls_helpers, redis_helpers, helpers
#   load cache_helpers
#   setup_file()    { http_setup_file; }  # nginx on two free loopback ports
#   teardown_file() { http_teardown_file; }
#   setup()         { cache_setup; http_setup; }
#   teardown()      { cache_teardown; }
#
# http_setup_file starts `nginx -p DIR -c DIR/nginx.conf` (daemon on; its
# pid file, error log and every temp path inside DIR) on HTTP_PORT and, with
# the test CA of tls_helpers.bash, on HTTPS_PORT, and stops it by PID in
# http_teardown_file (master and workers, never by name).  Its locations,
# all under one root HTTP_ROOT (so an object's file is HTTP_ROOT/LOCATION/...):
#
#   /cache/   WebDAV as the man page shows it: PUT DELETE MKCOL COPY MOVE,
#             PROPFIND OPTIONS (dav-ext), create_full_put_path, no size limit
#   /nolist/  the same without dav-ext: PROPFIND is 405
#   /small/   client_max_body_size 1k: an upload is 413
#   /e500/ /e503/   every request is 500 / 503
#   /rd500/ /rd503/ a GET or HEAD is 500 / 503, the rest is /cache/'s (reads fail, uploads work)
#   /wr500/   a PUT is 500, the rest is /cache/'s (reads work, uploads fail)
#   /auth/    basic auth, user HTTP_USER, password HTTP_PASSWORD
#   /bearer/  Authorization: Bearer HTTP_TOKEN, else 401
#   /roauth/  anyone reads, writing needs basic auth (the ccache wiki's limit_except)
#   /slow/    /cache/'s, but every answer comes at 1 MiB/s (limit_rate): slow restores
#
# The https server has /cache/ only, over the same root.  Each test gets its
# own directory below every location (http_setup): http_url LOCATION is
# http://127.0.0.1:HTTP_PORT/LOCATION/tN/ and obj_path KEY [LOCATION] the file
# nginx keeps KEY's object in; blh runs `bufferlock cache` on /cache/;
# requests reads this test's lines of nginx's access log.  At the end, the
# assertions the cache_http*.bats files share (assert_read_warning ...).

load tls_helpers

NGINX_BIN=${NGINX_BIN:-nginx}
HTTP_FAULT_SERVER="$BATS_TEST_DIRNAME/../tools/http_fault_server.py"

# The locations the suites use, one directory each under the root.
HTTP_LOCATIONS=(cache nolist small e500 e503 rd500 rd503 wr500 auth bearer roauth nochunk slowbody slow)

# _dav_ext_module: the path of the dav-ext module (PROPFIND), empty if missing.
_dav_ext_module() {
    local m
    for m in /usr/lib/nginx/modules/ngx_http_dav_ext_module.so \
        /usr/lib64/nginx/modules/ngx_http_dav_ext_module.so; do
        [[ -f $m ]] && {
            printf '%s\n' "$m"
            return 0
        }
    done
    return 1
}

# _nginx_conf DIR HTTP_PORT HTTPS_PORT: the configuration, on stdout.
_nginx_conf() {
    local dir=$1 port=$2 sport=$3 dav
    dav="dav_methods PUT DELETE MKCOL COPY MOVE;
            create_full_put_path on;
            client_max_body_size 0;
            dav_access user:rw;"
    is_root && echo "user root root;"
    cat <<EOF
load_module $(_dav_ext_module);
daemon on;
master_process on;
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/error.log info;
events { worker_connections 256; }
http {
    # One line a request: what the tests check of the protocol.
    log_format bl '\$request_method \$uri \$status cl=\$content_length te=\$http_transfer_encoding';
    access_log $dir/access.log bl;
    default_type application/octet-stream;
    client_body_temp_path $dir/data/.tmp/body;
    proxy_temp_path $dir/tmp/proxy;
    fastcgi_temp_path $dir/tmp/fastcgi;
    uwsgi_temp_path $dir/tmp/uwsgi;
    scgi_temp_path $dir/tmp/scgi;
    server {
        listen 127.0.0.1:$port;
        root $dir/data;
        location /cache/ {
            $dav
            dav_ext_methods PROPFIND OPTIONS;
        }
        location /nolist/ {
            $dav
        }
        location /small/ {
            dav_methods PUT DELETE MKCOL COPY MOVE;
            create_full_put_path on;
            dav_access user:rw;
            dav_ext_methods PROPFIND OPTIONS;
            client_max_body_size 1k;
        }
        location /e500/ { return 500; }
        location /e503/ { return 503; }
        location /rd500/ {
            if (\$request_method ~ ^(GET|HEAD)$) { return 500; }
            $dav
            dav_ext_methods PROPFIND OPTIONS;
        }
        location /rd503/ {
            if (\$request_method ~ ^(GET|HEAD)$) { return 503; }
            $dav
            dav_ext_methods PROPFIND OPTIONS;
        }
        # A server that wants a length first (as S3 and bazel-remote do).
        location /nochunk/ {
            if (\$http_transfer_encoding ~* chunked) { return 411; }
            $dav
            dav_ext_methods PROPFIND OPTIONS;
        }
        # A server that gives up on a body whose bytes stop for 1 s.
        location /slowbody/ {
            client_body_timeout 1s;
            $dav
            dav_ext_methods PROPFIND OPTIONS;
        }
        location /slow/ {
            limit_rate 1m;
            $dav
            dav_ext_methods PROPFIND OPTIONS;
        }
        location /wr500/ {
            if (\$request_method = PUT) { return 500; }
            $dav
            dav_ext_methods PROPFIND OPTIONS;
        }
        location /auth/ {
            auth_basic "bufferlock";
            auth_basic_user_file $dir/htpasswd;
            $dav
            dav_ext_methods PROPFIND OPTIONS;
        }
        location /roauth/ {
            limit_except GET HEAD {
                auth_basic "bufferlock";
                auth_basic_user_file $dir/htpasswd;
            }
            $dav
            dav_ext_methods PROPFIND OPTIONS;
        }
        location /bearer/ {
            if (\$http_authorization != "Bearer $HTTP_TOKEN") { return 401; }
            $dav
            dav_ext_methods PROPFIND OPTIONS;
        }
    }
    server {
        listen 127.0.0.1:$sport ssl;
        ssl_certificate $TLS_SERVER_CERT;
        ssl_certificate_key $TLS_SERVER_KEY;
        root $dir/data;
        location /cache/ {
            $dav
            dav_ext_methods PROPFIND OPTIONS;
        }
    }
}
EOF
}

# _is_nginx_pid PID: PID is (still) an nginx process (a recycled PID is never killed).
_is_nginx_pid() {
    [[ $1 =~ ^[0-9]+$ ]] && [[ $(cat "/proc/$1/comm" 2>/dev/null) == nginx ]]
}

# stop_nginx: stop the file's nginx by the PID in its pid file (SIGTERM,
# SIGKILL after a bounded wait), and wait until its workers are gone too.
stop_nginx() {
    local pid workers=() w
    [[ -n ${HTTP_DIR:-} && -s $HTTP_DIR/nginx.pid ]] || return 0
    pid=$(cat "$HTTP_DIR/nginx.pid")
    _is_nginx_pid "$pid" || return 0
    mapfile -t workers < <(pgrep -P "$pid" 2>/dev/null)
    kill -TERM "$pid" 2>/dev/null || true
    if ! wait_for_exit "$pid" 10; then
        kill -KILL "$pid" 2>/dev/null || true
        wait_for_exit "$pid" 5 || true
    fi
    for w in "${workers[@]}"; do
        wait_for_exit "$w" 5 || { _is_nginx_pid "$w" && kill -KILL "$w" 2>/dev/null; }
    done
    return 0
}

# _nginx_up PORT: nginx answers on 127.0.0.1:PORT.
_nginx_up() {
    [[ $(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$1/cache/") =~ ^[2-4] ]]
}

# http_setup_file: the test CA, the htpasswd, the token, and nginx on two free
# ports.  Exports HTTP_DIR, HTTP_ROOT, HTTP_PORT, HTTPS_PORT, HTTP_PID,
# HTTP_USER, HTTP_PASSWORD, HTTP_TOKEN and the TLS_* paths.
http_setup_file() {
    command -v "$NGINX_BIN" >/dev/null || {
        echo "nginx not found" >&2
        return 1
    }
    _dav_ext_module >/dev/null || {
        echo "the nginx dav-ext module (libnginx-mod-http-dav-ext) is not installed" >&2
        return 1
    }
    make_tls_fixture || return 1
    HTTP_DIR="$BATS_FILE_TMPDIR/nginx"
    HTTP_ROOT="$HTTP_DIR/data"
    HTTP_USER=builder
    HTTP_PASSWORD="pw-$RANDOM$RANDOM-never-shown"
    HTTP_TOKEN="tok-$RANDOM$RANDOM"
    mkdir -p "$HTTP_ROOT/.tmp/body" "$HTTP_DIR/tmp" || return 1
    printf '%s:%s\n' "$HTTP_USER" "$("$OPENSSL_BIN" passwd -apr1 "$HTTP_PASSWORD")" >"$HTTP_DIR/htpasswd"
    local try
    for ((try = 0; try < 8; try++)); do
        HTTP_PORT=$(free_port) || return 1
        HTTPS_PORT=$(free_port) || return 1
        [[ $HTTP_PORT != "$HTTPS_PORT" ]] || continue
        _nginx_conf "$HTTP_DIR" "$HTTP_PORT" "$HTTPS_PORT" >"$HTTP_DIR/nginx.conf"
        rm -f -- "$HTTP_DIR/nginx.pid"
        if "$NGINX_BIN" -p "$HTTP_DIR" -c "$HTTP_DIR/nginx.conf" -e "$HTTP_DIR/error.log" \
            </dev/null >>"$HTTP_DIR/start.log" 2>&1 3>&-; then
            if poll_until 10 _nginx_up "$HTTP_PORT"; then
                HTTP_PID=$(cat "$HTTP_DIR/nginx.pid")
                export HTTP_DIR HTTP_ROOT HTTP_PORT HTTPS_PORT HTTP_PID HTTP_USER \
                    HTTP_PASSWORD HTTP_TOKEN
                return 0
            fi
            stop_nginx
        fi
        grep -q 'Address already in use' "$HTTP_DIR/start.log" "$HTTP_DIR/error.log" 2>/dev/null || break
    done
    echo "http_setup_file: nginx did not start; logs:" >&2
    cat -- "$HTTP_DIR/start.log" "$HTTP_DIR/error.log" >&2 2>/dev/null
    return 1
}

http_teardown_file() {
    stop_nginx
}

# http_redis_setup_file / http_redis_teardown_file: nginx and the shared
# redis-server of redis_helpers.bash, for suites that use both (then setup
# calls redis_reset_shared and http_setup).
http_redis_setup_file() {
    redis_setup_file || return 1
    http_setup_file
}
http_redis_teardown_file() {
    http_teardown_file
    redis_teardown_file
}

# http_redis_setup / http_redis_teardown: each test of such a suite: its
# cache directory, the shared redis-server flushed, its own directory on
# nginx; and every process it started stopped.
http_redis_setup() {
    cache_setup
    redis_reset_shared
    http_setup
}
http_redis_teardown() {
    track_descendants
    redis_teardown
}

# http_setup: this test's directory under every location (the objects of one
# test never meet another's); fails if nginx is gone.
http_setup() {
    _is_nginx_pid "${HTTP_PID:-}" || fail "nginx (pid ${HTTP_PID:-?}) is gone"
    HTTP_T="t$BATS_TEST_NUMBER"
    local l
    for l in "${HTTP_LOCATIONS[@]}"; do
        mkdir -p "$HTTP_ROOT/$l/$HTTP_T"
    done
    STORE=$(http_url cache)
}

# http_url LOCATION [PORT]: the store URL of this test under LOCATION.
http_url() {
    printf 'http://127.0.0.1:%s/%s/%s/\n' "${2:-$HTTP_PORT}" "$1" "$HTTP_T"
}

# https_url: the store URL of this test on the https server (/cache/).
https_url() {
    printf 'https://127.0.0.1:%s/cache/%s/\n' "$HTTPS_PORT" "$HTTP_T"
}

# obj_dir [LOCATION]: the directory nginx keeps this test's objects in.
obj_dir() {
    printf '%s/%s/%s\n' "$HTTP_ROOT" "${1:-cache}" "$HTTP_T"
}

# obj_path KEY [LOCATION]: the file of KEY's object (no --depends).
obj_path() {
    printf '%s/%s.entry\n' "$(obj_dir "${2:-cache}")" "$(key_md5 "$1")"
}

# key_objects KEY [LOCATION]: the files of KEY's objects, whatever their
# address (the inputs and the --output list name them), one a line.
key_objects() {
    find "$(obj_dir "${2:-cache}")" -maxdepth 1 -type f -name "$(key_md5 "$1")*.entry" -print 2>/dev/null |
        LC_ALL=C sort
}

# objects [LOCATION]: the names of the objects there (files, not the
# directories), one a line, sorted.
objects() {
    [[ -d $(obj_dir "${1:-cache}") ]] || return 0
    find "$(obj_dir "${1:-cache}")" -type f -printf '%P\n' | LC_ALL=C sort
}

# assert_no_objects [LOCATION]: nothing was stored there.
assert_no_objects() {
    local got
    got=$(objects "${1:-cache}")
    [[ -z $got ]] || fail "objects left under /${1:-cache}/: $got"
}

# blh ARGS...: `bufferlock cache` with the test's cache dir and the http store
# at /cache/.
blh() {
    "$BL" cache --cache-dir "$C" --store "$STORE" "$@"
}

# start_fault_server MODE [FILE]: http_fault_server.py MODE on a free port
# (tracked: stopped by PID in teardown).  Sets FAULT_PORT, FAULT_PID, FAULT_URL
# (this test's store URL on it) and FAULT_LOG (its request log).
start_fault_server() {
    local mode=$1 file=${2:-} try
    FAULT_LOG="$T/fault.log"
    for ((try = 0; try < 8; try++)); do
        FAULT_PORT=$(free_port) || return 1
        : >"$FAULT_LOG"
        FAULT_LOG=$FAULT_LOG python3 "$HTTP_FAULT_SERVER" "$mode" "$FAULT_PORT" ${file:+"$file"} \
            </dev/null >>"$T/fault.err" 2>&1 3>&- &
        FAULT_PID=$!
        track_pid "$FAULT_PID"
        if poll_until 10 grep -qx ready "$FAULT_LOG"; then
            FAULT_URL="http://127.0.0.1:$FAULT_PORT/cache/$HTTP_T/"
            return 0
        fi
        pid_alive "$FAULT_PID" && fail "the fault server did not start: $(cat "$T/fault.err")"
        grep -q 'Address already in use' "$T/fault.err" || break
    done
    fail "the fault server did not start: $(cat "$T/fault.err")"
}

# requests [METHOD]: this test's requests in nginx's access log ("METHOD URI
# STATUS cl=CONTENT-LENGTH te=TRANSFER-ENCODING"), of METHOD if given.
requests() {
    grep -F -- "/$HTTP_T/" "$HTTP_DIR/access.log" | grep -E "^${1:-[A-Z]+} " || true
}

# curl_status ARGS...: the HTTP status curl gets (bounded).
curl_status() {
    curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$@"
}

# --- for the cache_http*.bats tests ----------------------------------------

# obj K [LOCATION]: KEY's object name (no --depends).
obj() {
    printf '%s.entry\n' "$(key_md5 "$1")"
}

# object_to_entry OBJECT FILE: the entry file whose bytes OBJECT holds
# (body, header, trailer, footer: the footer's first 8 bytes are the header's
# length) laid out as an entry file (header, body, trailer).
object_to_entry() {
    local size h
    size=$(stat -c %s "$1")
    h=$(od -An -t u8 -j $((size - 16)) -N 8 "$1" | tr -d ' ')
    [[ $(tail -c 8 "$1") == BLCTAIL ]] || fail "$1 does not end in the object magic"
    { tail -c $((h + 32)) "$1" | head -c "$h" &&
        head -c $((size - h - 32)) "$1" &&
        tail -c 32 "$1" | head -c 16; } >"$2" || fail "cannot lay $1 out as an entry"
}

# seed_object KEY TEXT LOCATION: KEY's object holding TEXT, built through
# /cache/ and copied where LOCATION keeps its objects.
seed_object() {
    blh "$1" echo "$2" >/dev/null || fail "cannot build the seed of '$1'"
    mkdir -p "$(obj_dir "$3")"
    cp -- "$(obj_path "$1")" "$(obj_path "$1" "$3")"
}

# assert_read_warning KEY URL WHAT...: $stderr is one line: the warning of an
# entry that could not be read, or was ignored, naming KEY, the store, the
# object (READ_OBJECT when set: an entry with --output is named by its
# address; else KEY's plain object), and each WHAT.
assert_read_warning() {
    local key=$1 url=$2
    shift 2
    assert_one_bufferlock_line "the cache entry of '$key' (HTTP store at $url, object ${READ_OBJECT:-$(obj "$key")}): " \
        "; rebuilding it" "$@"
    [[ $stderr == "bufferlock: cannot read the cache entry"* ||
        $stderr == "bufferlock: ignoring the cache entry"* ]] || fail "not a read warning: $stderr"
}

# _runs_at_least N: the counted command ran N times or more.
_runs_at_least() { (($(runs) >= $1)); }

# requests_since N: this test's requests after its first N.
requests_since() { requests | tail -n +$(($1 + 1)); }

# _logged METHOD N [AFTER]: nginx logged N requests of METHOD for this test
# (after its first AFTER), or more.
_logged() { (($(requests_since "${3:-0}" | grep -c "^$1 ") >= $2)); }

# assert_within MS BOUND_MS: the call did not hang (BOUND_MS plus room for load).
assert_within() {
    (($1 < $(slack_ms "$2"))) || fail "took $1 ms, more than $(slack_ms "$2") ms"
}
