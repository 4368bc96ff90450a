// The cached tier's persistent rows as an append-only log of fixed-size segments in one working file.
//
// Training rewrites every row it looks up, so nearly every evicted row is dirty. Writing each one in place costs a
// pwrite per row; the log instead collects evicted rows in the open segment (in RAM) and writes the whole segment
// with one pwrite once it is full. `where` maps a slot to the record holding its newest copy; older copies become
// dead space, which a greedy cleaner reclaims: when the segments in use hold more than 3/2 of the live rows, the
// segment with the fewest live records is read back, its live records appended again, and the segment reused.
// So the file stays bounded (about 3/2 of the live rows' records plus a few segments) however often rows are
// rewritten.
//
// Records are laid out as the old in-place file was: whole rows per `block_size` block (none straddles two), so
// reading one row touches one block.
//
// The cleaner copies a victim's live records from a read-only mapping of that one segment, unmapped when it is
// done, instead of reading the whole segment into a buffer first (or each record with a pread): one copy per live
// row instead of two, no system call per record, and the mapped pages count in the resident set only while that
// segment is cleaned. Where mmap fails (or with FLOW_EMBEDDING_MMAP=0 in the environment) it reads as before.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace flow_embedding {

struct LogStats {
  int64_t file_bytes = 0;        // size of the working file (its segments' high-water mark)
  int64_t live_bytes = 0;        // bytes of the rows' newest copies
  int64_t segments_cleaned = 0;  // segments the cleaner reclaimed
  int64_t rows_moved = 0;        // live records the cleaner copied forward
  int64_t sparse_cleans = 0;     // cleaned segments whose few live records were read one by one
};

class RowLog {
 public:
  // `segment_bytes` is a target (rounded to whole blocks); `background` writes full segments from a thread.
  RowLog(std::string path, int64_t row_bytes, int64_t block_size, int64_t segment_bytes, bool background);
  ~RowLog();  // the working file goes away with its store: snapshots are what persists
  RowLog(const RowLog&) = delete;
  RowLog& operator=(const RowLog&) = delete;

  // Makes `row` the newest copy of `slot`.
  void append(int64_t slot, const unsigned char* row);
  bool has(int64_t slot) const { return slot < static_cast<int64_t>(where_.size()) && where_[slot] >= 0; }
  // The newest copy of one row, or of n rows (distinct slots) read in file order.
  void read(int64_t slot, unsigned char* dst) const;
  void read_batch(const int64_t* slots, unsigned char* const* dsts, int64_t n) const;
  // Writes the open segment's rows too, so that the file holds every row; waits for the background writer.
  void sync();
  LogStats stats() const;

 private:
  int64_t record_offset(int64_t rec) const;  // file offset of global record `rec`
  int64_t segment_of(int64_t slot) const { return where_[slot] / seg_rows_; }
  const unsigned char* in_memory(int64_t rec) const;  // the record's bytes when its segment is in RAM, else null
  void seal();
  void open_segment();
  void clean_if_needed();
  void clean(int64_t victim);
  void wait_writer();  // until the background write finishes; rethrows its error
  void writer_loop();
  void io(bool write, void* buf, size_t bytes, int64_t off) const;

  std::string path_;
  int fd_ = -1;
  int64_t row_bytes_, block_size_;
  int64_t per_block_;  // rows per block when a row fits in one, else 0 (a row then takes `stride_` bytes)
  int64_t stride_;
  int64_t seg_rows_, seg_bytes_;

  std::vector<int64_t> where_;          // slot -> global record (segment * seg_rows_ + index), -1: never written
  std::vector<int64_t> rec_slot_;       // global record -> the slot it was written for
  std::vector<int32_t> seg_live_;       // live records per segment
  std::vector<uint8_t> seg_free_;
  std::vector<int64_t> free_segs_;
  int64_t nsegs_ = 0, live_ = 0;
  int64_t cur_ = -1, fill_ = 0;
  std::vector<unsigned char> buf_, clean_buf_;
  bool cleaning_ = false;
  bool map_segments_ = true;  // the cleaner reads victims through a mapping
  int64_t cleaned_ = 0, moved_ = 0, sparse_cleans_ = 0;

  // background writer: `spare_` holds segment `inflight_` (being or already written) until the next seal
  bool background_;
  std::vector<unsigned char> spare_;
  int64_t inflight_ = -1;
  std::mutex mu_;
  std::condition_variable cv_;
  bool job_ = false, stop_ = false;
  std::exception_ptr error_;
  std::thread writer_;
};

}  // namespace flow_embedding
