# shellcheck shell=bash
# Helpers for the black-box suites of bufferlock's TLS transport to Redis
# (rediss://).  Loads redis_helpers.bash (and so helpers.bash).
#
#   setup_file()    { redis_setup_file; make_tls_fixture; start_tls_redis_as TLS "$TLS_SERVER_CERT" "$TLS_SERVER_KEY"; ... }
#   teardown_file() { redis_teardown_file; }     # stops every server by PID
#
# make_tls_fixture makes, once per bats file, in $BATS_FILE_TMPDIR/tls:
#
#   ca.pem ca.key               the test CA                     TLS_CA, TLS_CA_KEY
#   server.pem server.key       SANs IP:127.0.0.1, DNS:localhost TLS_SERVER_CERT, _KEY
#   other.pem other.key         SAN DNS:other.example only       TLS_OTHER_CERT, _KEY
#   expired.pem expired.key     SANs as server, valid 2020-01-01 .. 2020-01-02
#                                                               TLS_EXPIRED_CERT, _KEY
#   ca2.pem ca2.key             a second, unrelated CA          TLS_CA2
#   client.pem client.key       a client certificate signed by the CA
#                                                               TLS_CLIENT_CERT, _KEY
#   notpem.pem                  text that is not PEM            TLS_NOTPEM
#
# (EC P-256 keys: fast.)  All are signed with `openssl ca` and a private
# config, so the expired certificate can get -startdate/-enddate in the past
# (OpenSSL 3.0's x509 -req has no -not_before/-not_after) and nothing depends
# on the system's openssl.cnf.  The variables are exported, so tests see them.
#
# start_tls_redis_as NAME CERT KEY [redis-server ARGS...] starts a TLS-only
# redis-server (--port 0 --tls-port P, --tls-ca-cert-file the test CA,
# --tls-auth-clients no unless ARGS say otherwise) through start_redis_as, so
# it is registered and stopped by PID like every other server; NAME_URL is
# rediss://127.0.0.1:P and rcli_to NAME talks TLS to it.

load redis_helpers

OPENSSL_BIN=${OPENSSL_BIN:-openssl}

# The openssl config for the fixture's CA: req for the CA certificates, ca
# for everything signed by the CA.  SAN comes from the environment.
_tls_openssl_cnf() {
    cat <<'EOF'
[ req ]
distinguished_name = req_dn
prompt = no
[ req_dn ]
CN = unused
[ v3_ca ]
basicConstraints = critical, CA:true
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[ ca ]
default_ca = ca_default
[ ca_default ]
dir = .
database = $dir/index.txt
new_certs_dir = $dir/newcerts
serial = $dir/serial
default_md = sha256
policy = policy_any
unique_subject = no
email_in_dn = no
copy_extensions = none
[ policy_any ]
commonName = supplied
[ server_ext ]
basicConstraints = critical, CA:false
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = $ENV::SAN
[ client_ext ]
basicConstraints = critical, CA:false
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = clientAuth
EOF
}

# _tls_key FILE: a new EC P-256 private key (PEM, mode 600).
_tls_key() {
    (umask 077 && "$OPENSSL_BIN" genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1")
}

# _tls_ca NAME CN: a self-signed CA NAME.pem / NAME.key (in the current dir).
_tls_ca() {
    _tls_key "$1.key" &&
        "$OPENSSL_BIN" req -config openssl.cnf -new -x509 -key "$1.key" -subj "/CN=$2" \
            -extensions v3_ca -days 3650 -out "$1.pem"
}

# _tls_sign NAME CN EXTENSIONS SAN [openssl ca options...]: NAME.key and
# NAME.pem signed by ca.pem (in the current dir).
_tls_sign() {
    local name=$1 cn=$2 ext=$3 san=$4
    shift 4
    _tls_key "$name.key" &&
        "$OPENSSL_BIN" req -config openssl.cnf -new -key "$name.key" -subj "/CN=$cn" \
            -out "$name.csr" &&
        SAN=$san "$OPENSSL_BIN" ca -config openssl.cnf -batch -notext -cert ca.pem \
            -keyfile ca.key -extensions "$ext" "$@" -in "$name.csr" -out "$name.pem"
}

# make_tls_fixture: the certificates above, made once per bats file (call it
# from setup_file); sets and exports TLS_DIR and the TLS_* paths.
make_tls_fixture() {
    command -v "$OPENSSL_BIN" >/dev/null || {
        echo "make_tls_fixture: openssl not found" >&2
        return 1
    }
    TLS_DIR="$BATS_FILE_TMPDIR/tls"
    if [[ ! -s $TLS_DIR/complete ]]; then
        rm -rf -- "$TLS_DIR"
        mkdir -p -- "$TLS_DIR/newcerts" || return 1
        if ! (
            set -e
            cd -- "$TLS_DIR"
            export SAN=DNS:unused # the config refers to it: always defined
            _tls_openssl_cnf >openssl.cnf
            : >index.txt
            echo 1000 >serial
            _tls_ca ca 'bufferlock test CA'
            _tls_ca ca2 'bufferlock unrelated CA'
            _tls_sign server 'bufferlock test server' server_ext \
                'IP:127.0.0.1,DNS:localhost' -days 3650
            _tls_sign other other.example server_ext 'DNS:other.example' -days 3650
            _tls_sign expired 'bufferlock expired server' server_ext \
                'IP:127.0.0.1,DNS:localhost' -startdate 20200101000000Z -enddate 20200102000000Z
            _tls_sign client 'bufferlock test client' client_ext DNS:unused -days 3650
            printf 'this is not a PEM file\n-----BEGIN NOTHING-----\n' >notpem.pem
            echo ok >complete
        ) >"$TLS_DIR/openssl.log" 2>&1; then
            echo "make_tls_fixture: openssl failed; log:" >&2
            cat -- "$TLS_DIR/openssl.log" >&2
            return 1
        fi
    fi
    TLS_CA=$TLS_DIR/ca.pem TLS_CA_KEY=$TLS_DIR/ca.key TLS_CA2=$TLS_DIR/ca2.pem
    TLS_SERVER_CERT=$TLS_DIR/server.pem TLS_SERVER_KEY=$TLS_DIR/server.key
    TLS_OTHER_CERT=$TLS_DIR/other.pem TLS_OTHER_KEY=$TLS_DIR/other.key
    TLS_EXPIRED_CERT=$TLS_DIR/expired.pem TLS_EXPIRED_KEY=$TLS_DIR/expired.key
    TLS_CLIENT_CERT=$TLS_DIR/client.pem TLS_CLIENT_KEY=$TLS_DIR/client.key
    TLS_NOTPEM=$TLS_DIR/notpem.pem
    export TLS_DIR TLS_CA TLS_CA_KEY TLS_CA2 TLS_SERVER_CERT TLS_SERVER_KEY \
        TLS_OTHER_CERT TLS_OTHER_KEY TLS_EXPIRED_CERT TLS_EXPIRED_KEY \
        TLS_CLIENT_CERT TLS_CLIENT_KEY TLS_NOTPEM
}

# start_tls_redis_as NAME CERT KEY [redis-server ARGS...]: a TLS-only server on
# a free loopback port, presenting CERT/KEY and trusting the test CA for client
# certificates.  ARGS may override --tls-auth-clients (default no); with
# --tls-auth-clients yes the readiness check presents the test client
# certificate; for a CERT that does not verify against the test CA (the
# expired one) redis-cli runs with --insecure.  Sets NAME_PORT, NAME_PID,
# NAME_DIR, NAME_URL (rediss://127.0.0.1:P), NAME_TLS_CA/_CERT/_KEY/_INSECURE
# (what redis-cli needs).
start_tls_redis_as() {
    local name=$1 cert=$2 key=$3 auth=no i
    shift 3
    local args=("$@")
    for ((i = 0; i + 1 < ${#args[@]}; i++)); do
        [[ ${args[i]} == --tls-auth-clients ]] && auth=${args[i + 1]}
    done
    local REDIS_SPAWN_TLS_CA=$TLS_CA REDIS_SPAWN_TLS_CERT='' REDIS_SPAWN_TLS_KEY='' \
        REDIS_SPAWN_TLS_INSECURE=''
    if [[ $auth == yes ]]; then
        REDIS_SPAWN_TLS_CERT=$TLS_CLIENT_CERT REDIS_SPAWN_TLS_KEY=$TLS_CLIENT_KEY
    fi
    # A certificate that fails verification (the expired one) is still served:
    # redis-cli then skips verification to talk to the server.
    if ! "$OPENSSL_BIN" verify -CAfile "$TLS_CA" "$cert" >/dev/null 2>&1; then
        REDIS_SPAWN_TLS_INSECURE=1
    fi
    start_redis_as "$name" --tls-cert-file "$cert" --tls-key-file "$key" \
        --tls-ca-cert-file "$TLS_CA" --tls-auth-clients no "$@" || return 1
    local -n _port_ref="${name}_PORT"
    printf -v "${name}_URL" 'rediss://127.0.0.1:%s' "$_port_ref"
}

# export_redis_vars NAME: export NAME's scalar variables (PORT, PID, URL, DIR,
# SOCK, TLS_*), so that a server started in setup_file is
# usable from the tests (arrays such as NAME_ARGS cannot be exported).
export_redis_vars() {
    local v
    for v in PORT PID URL DIR SOCK TLS_CA TLS_CERT TLS_KEY TLS_INSECURE; do
        export "${1}_$v"
    done
}

# tls_flush NAME: FLUSHALL and SCRIPT FLUSH on NAME's server (fails the test
# if the server is gone).
tls_flush() {
    local -n _pid_ref="$1_PID"
    _is_redis_pid "$_pid_ref" || fail "redis server $1 (pid $_pid_ref) is gone"
    [[ $(rcli_to "$1" FLUSHALL) == OK ]] || fail "FLUSHALL on server $1 failed"
    rcli_to "$1" SCRIPT FLUSH >/dev/null
}
