// Stored data compressed with zstd (--compress; the Redis store always), in
// blocks, so that both writing and serving hold at most one block in memory:
//
//   each block: 4 stored length S (bit 31: zstd-compressed), 4 raw length R
//               (at most compress_block), then S bytes (a zstd frame, or R
//               raw bytes when that block did not compress)
//
// The first block decides for the whole stream: when it does not compress
// below 95 % of its size, the stream is stored raw, as without compression
// (no blocks: served zero-copy as before). libzstd is linked statically: its
// code costs a run that does not compress nothing.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace bufferlock {

inline constexpr std::size_t compress_block = 1024 * 1024;
inline constexpr std::size_t compress_block_header = 8;

// Takes stored bytes; false to stop (the error is the sink's to keep).
using StoredSink = std::function<bool(const char* data, std::size_t len)>;

class BlockCompressor {
public:
  explicit BlockCompressor(StoredSink sink);
  ~BlockCompressor();
  BlockCompressor(const BlockCompressor&) = delete;
  BlockCompressor& operator=(const BlockCompressor&) = delete;

  // Raw bytes in; false when the sink refused.
  bool write(const char* data, std::size_t len);
  // The rest out; false when the sink refused.
  bool finish();
  // Whether the stream went out in blocks (else raw); known after finish().
  bool framed() const { return mode_ == Mode::framed; }
  std::uint64_t raw_len() const { return raw_len_; }

private:
  enum class Mode { undecided, raw, framed };
  bool flush_block();

  StoredSink sink_;
  Mode mode_ = Mode::undecided;
  std::string block_; // raw bytes of the block being filled
  std::string out_;   // a block as stored
  std::uint64_t raw_len_ = 0;
  void* cctx_ = nullptr; // ZSTD_CCtx, reused across blocks
};

// One zstd frame (any zstd reader takes it), or the bytes as they are: the
// first block decides as for BlockCompressor. For streams read by others
// (the --output archive, a tar or tar.zst that libarchive reads either way).
class FrameCompressor {
public:
  FrameCompressor(StoredSink sink, int level);
  ~FrameCompressor();
  FrameCompressor(const FrameCompressor&) = delete;
  FrameCompressor& operator=(const FrameCompressor&) = delete;

  // Raw bytes in; false when the sink refused or zstd failed.
  bool write(const char* data, std::size_t len);
  // The rest out (the frame's end); false as for write().
  bool finish();

private:
  enum class Mode { undecided, raw, framed };
  bool decide();
  bool compress(const char* data, std::size_t len, bool last);

  StoredSink sink_;
  int level_;
  Mode mode_ = Mode::undecided;
  std::string block_; // the first block, until decided
  std::string out_;   // compressed bytes on their way to the sink
  void* cctx_ = nullptr;
};

// Reads `len` stored bytes at `offset` of the stored stream into `buf`.
using StoredReader = std::function<bool(std::uint64_t offset, char* buf, std::size_t len)>;

// Decodes the `stored_len` bytes of a framed stream block by block, writing
// each block's raw bytes to `out`; false when a block is malformed, the raw
// total is not `raw_len`, or `out` refused.
bool decode_blocks(const StoredReader& read, std::uint64_t stored_len, std::uint64_t raw_len,
                   const std::function<bool(std::string_view)>& out);

} // namespace bufferlock
