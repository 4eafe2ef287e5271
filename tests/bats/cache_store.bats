#!/usr/bin/env bats
# bufferlock cache --store and --max-entry: bad inputs (SPEC §10, §15). The
# redis store itself: cache_redis.bats.

load helpers
load cache_helpers

setup() { cache_setup; }
teardown() { cache_teardown; }

@test "--max-entry 0 and 12X are usage errors naming the option" {
    for v in 0 12X '' 1.5M -1; do
        run --separate-stderr blc --store redis -r redis://127.0.0.1:1 --max-entry "$v" "$K" true
        assert_usage_error "--max-entry" "'$v'"
    done
    assert_runs 0
}

@test "--store nfs (or BUFFERLOCK_CACHE_STORE=nfs) is a usage error" {
    run --separate-stderr blc --store nfs "$K" true
    assert_usage_error "invalid --store 'nfs'" "file, redis, an http:// or https:// URL or s3://BUCKET/PREFIX"
    BUFFERLOCK_CACHE_STORE=nfs run --separate-stderr blc "$K" true
    assert_usage_error "BUFFERLOCK_CACHE_STORE" "'nfs'"
    # file is the default, and may be named
    run --separate-stderr blc --store file "$K" echo ok
    assert_success
    assert_output ok
}

@test "--store redis needs exactly one Redis server" {
    run --separate-stderr blc --store redis "$K" true
    assert_usage_error "--store redis needs a Redis server"
    run --separate-stderr blc --store redis -d "$T/locks" "$K" true
    assert_usage_error "--store redis needs a Redis server"
    run --separate-stderr blc --store redis -r redis://127.0.0.1:1 -r redis://127.0.0.1:2 "$K" true
    assert_usage_error "exactly one Redis server, not 2"
    BUFFERLOCK_REDIS='redis://127.0.0.1:1 redis://127.0.0.1:2' BUFFERLOCK_CACHE_STORE=redis \
        run --separate-stderr blc "$K" true
    assert_usage_error "exactly one Redis server"
}

@test "the environment alone can name the Redis store and its servers, for --list too" {
    # BUFFERLOCK_CACHE_STORE decides that --list uses the backend, so
    # BUFFERLOCK_REDIS is read for it
    BUFFERLOCK_REDIS='redis://127.0.0.1:1 redis://127.0.0.1:2' BUFFERLOCK_CACHE_STORE=redis \
        run --separate-stderr blc --list
    assert_usage_error "exactly one Redis server, not 2"
}

@test "the http store's options are refused with another store, and its variables not read" {
    run --separate-stderr blc --store-timeout 5 "$K" true
    assert_usage_error "--store-timeout needs an http:// or https:// --store"
    run --separate-stderr blc --store file --store-token-file "$T/token" "$K" true
    assert_usage_error "--store-token-file needs an http:// or https:// --store"
    BUFFERLOCK_STORE_TIMEOUT=abc BUFFERLOCK_STORE_TOKEN_FILE=$T/none run --separate-stderr blc "$K" echo ok
    assert_success
    assert_output ok
}
