#include "cache/compress.hpp"

#include "util/le.hpp"

#include <zstd.h>

// libzstd.a refers to these tracing hooks as weak symbols, which ld.so
// would look up in every loaded library at each start (~1,200 instructions
// each); defined here they bind at link time. Returning 0 traces nothing.
// NOLINTBEGIN(readability-identifier-naming): libzstd's names
extern "C" {
unsigned long long ZSTD_trace_compress_begin(const void*) { return 0; }
void ZSTD_trace_compress_end(unsigned long long, const void*) {}
unsigned long long ZSTD_trace_decompress_begin(const void*) { return 0; }
void ZSTD_trace_decompress_end(unsigned long long, const void*) {}
}
// NOLINTEND(readability-identifier-naming)

namespace bufferlock {

namespace {

constexpr int zstd_level = 1; // fast: hundreds of MB/s per core, logs shrink several times
constexpr std::uint32_t block_compressed = 0x80000000U;

// Stored at most this share of the raw size, or the first block stays raw.
bool worth_it(std::size_t stored, std::size_t raw) { return stored * 100 < raw * 95; }

} // namespace

BlockCompressor::BlockCompressor(StoredSink sink) : sink_(std::move(sink)) {}

BlockCompressor::~BlockCompressor() { ZSTD_freeCCtx(static_cast<ZSTD_CCtx*>(cctx_)); }

bool BlockCompressor::write(const char* data, std::size_t len) {
  raw_len_ += len;
  if (mode_ == Mode::raw) return sink_(data, len);
  while (len > 0) {
    const std::size_t take = std::min(len, compress_block - block_.size());
    block_.append(data, take);
    data += take;
    len -= take;
    if (block_.size() == compress_block && !flush_block()) return false;
    if (mode_ == Mode::raw) return len == 0 || sink_(data, len); // the first block decided: raw
  }
  return true;
}

bool BlockCompressor::finish() {
  if (mode_ == Mode::raw || block_.empty()) {
    if (mode_ == Mode::undecided) mode_ = Mode::raw; // nothing at all: stored raw (empty)
    return true;
  }
  return flush_block();
}

bool BlockCompressor::flush_block() {
  if (!cctx_) cctx_ = ZSTD_createCCtx();
  const std::size_t bound = ZSTD_compressBound(block_.size());
  out_.resize(compress_block_header + bound);
  std::size_t n = cctx_ ? ZSTD_compressCCtx(static_cast<ZSTD_CCtx*>(cctx_), out_.data() + compress_block_header,
                                            bound, block_.data(), block_.size(), zstd_level)
                        : 0;
  const bool compressed = cctx_ && !ZSTD_isError(n) && worth_it(n + compress_block_header, block_.size());
  if (mode_ == Mode::undecided) {
    mode_ = compressed ? Mode::framed : Mode::raw;
    if (mode_ == Mode::raw) {
      const bool ok = sink_(block_.data(), block_.size());
      block_.clear();
      return ok;
    }
  }
  if (!compressed) {
    out_.replace(compress_block_header, std::string::npos, block_);
    n = block_.size();
  }
  out_.resize(compress_block_header + n);
  std::string head;
  put_le<std::uint32_t>(head, static_cast<std::uint32_t>(n) | (compressed ? block_compressed : 0));
  put_le<std::uint32_t>(head, static_cast<std::uint32_t>(block_.size()));
  out_.replace(0, compress_block_header, head);
  block_.clear();
  return sink_(out_.data(), out_.size());
}

FrameCompressor::FrameCompressor(StoredSink sink, int level) : sink_(std::move(sink)), level_(level) {}

FrameCompressor::~FrameCompressor() { ZSTD_freeCCtx(static_cast<ZSTD_CCtx*>(cctx_)); }

bool FrameCompressor::write(const char* data, std::size_t len) {
  if (mode_ == Mode::raw) return sink_(data, len);
  if (mode_ == Mode::framed) return compress(data, len, false);
  const std::size_t take = std::min(len, compress_block - block_.size());
  block_.append(data, take);
  if (block_.size() < compress_block) return true;
  return decide() && (take == len || write(data + take, len - take));
}

bool FrameCompressor::finish() {
  if (mode_ == Mode::undecided && !decide()) return false;
  return mode_ == Mode::raw || compress(nullptr, 0, true);
}

// A trial of the first block at the fast level: a stream that does not
// shrink there goes raw, without paying the frame's level on all of it.
bool FrameCompressor::decide() {
  cctx_ = ZSTD_createCCtx();
  if (!cctx_) return false;
  auto* c = static_cast<ZSTD_CCtx*>(cctx_);
  out_.resize(ZSTD_compressBound(block_.size()));
  const std::size_t n = ZSTD_compressCCtx(c, out_.data(), out_.size(), block_.data(), block_.size(), zstd_level);
  std::string first;
  first.swap(block_);
  if (ZSTD_isError(n) || !worth_it(n, first.size())) {
    mode_ = Mode::raw;
    out_ = std::string();
    return sink_(first.data(), first.size());
  }
  mode_ = Mode::framed;
  ZSTD_CCtx_reset(c, ZSTD_reset_session_and_parameters);
  if (ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level_))) return false;
  out_.resize(ZSTD_CStreamOutSize());
  return compress(first.data(), first.size(), false);
}

bool FrameCompressor::compress(const char* data, std::size_t len, bool last) {
  auto* c = static_cast<ZSTD_CCtx*>(cctx_);
  ZSTD_inBuffer in{data, len, 0};
  for (;;) {
    ZSTD_outBuffer out{out_.data(), out_.size(), 0};
    const std::size_t left = ZSTD_compressStream2(c, &out, &in, last ? ZSTD_e_end : ZSTD_e_continue);
    if (ZSTD_isError(left)) return false;
    if (out.pos > 0 && !sink_(out_.data(), out.pos)) return false;
    if (last ? left == 0 : in.pos == in.size) return true;
  }
}

bool decode_blocks(const StoredReader& read, std::uint64_t stored_len, std::uint64_t raw_len,
                   const std::function<bool(std::string_view)>& out) {
  struct Dctx {
    ZSTD_DCtx* p = ZSTD_createDCtx();
    ~Dctx() { ZSTD_freeDCtx(p); }
  } dctx;
  if (!dctx.p) return false;
  std::string stored, raw;
  std::uint64_t at = 0, produced = 0;
  while (at < stored_len) {
    char head[compress_block_header];
    if (stored_len - at < compress_block_header || !read(at, head, sizeof head)) return false;
    const std::string_view h(head, sizeof head);
    const std::uint32_t word = get_le<std::uint32_t>(h, 0);
    const std::size_t s = word & ~block_compressed;
    const std::size_t r = get_le<std::uint32_t>(h, 4);
    at += compress_block_header;
    if (r > compress_block || s > stored_len - at || s > ZSTD_compressBound(compress_block)) return false;
    stored.resize(s);
    if (!read(at, stored.data(), s)) return false;
    at += s;
    if ((word & block_compressed) == 0) {
      if (s != r || !out(stored)) return false;
    } else {
      raw.resize(r);
      const std::size_t n = ZSTD_decompressDCtx(dctx.p, raw.data(), r, stored.data(), s);
      if (ZSTD_isError(n) || n != r || !out(raw)) return false;
    }
    produced += r;
  }
  return produced == raw_len;
}

} // namespace bufferlock
