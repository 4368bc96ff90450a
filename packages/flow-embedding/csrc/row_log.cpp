#include "row_log.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <utility>

namespace flow_embedding {
namespace {

std::string errno_text(const std::string& what, const std::string& path) {
  return what + " '" + path + "': " + std::strerror(errno);
}

// A read-only mapping of [off, off + bytes) of a file, unmapped on destruction; `data` is null where mmap failed.
class FileRange {
 public:
  FileRange(int fd, int64_t off, int64_t bytes) {
    const int64_t page = ::sysconf(_SC_PAGESIZE);
    const int64_t start = off / page * page;  // mmap's offset must be page-aligned
    len_ = static_cast<size_t>(bytes + off - start);
    void* m = ::mmap(nullptr, len_, PROT_READ, MAP_SHARED, fd, start);
    if (m != MAP_FAILED) {
      base_ = static_cast<unsigned char*>(m);
      data = base_ + (off - start);
    }
  }
  ~FileRange() {
    if (base_) ::munmap(base_, len_);
  }
  FileRange(const FileRange&) = delete;
  FileRange& operator=(const FileRange&) = delete;
  const unsigned char* data = nullptr;

 private:
  unsigned char* base_ = nullptr;
  size_t len_ = 0;
};

// Cleaning starts once the records of the segments in use exceed 3/2 of the live rows plus kSlackSegments
// segments; the emptiest segment is then at most 2/3 live, so a pass frees a segment for at most 2/3 of one
// segment's writes. A tight bound costs those copies (a read of a whole segment from the page cache and a
// memcpy per live row): at 5/4 the cleaner's victims on the bench's zipf stream were about 63% live and it
// copied 1.6 rows per evicted row, at 3/2 about 0.7. A file that grows costs more still: writing pages the
// file never had is many times slower than rewriting cached ones (page-cache and block allocation), and it is
// what a log that keeps growing does; the looser bound only lets the file reach its working size later.
constexpr int64_t kSpaceNum = 3, kSpaceDen = 2;
constexpr int64_t kSlackSegments = 2;
// A victim with fewer than 1/16 of its records live has them read one at a time (a pread each) instead of the
// whole segment: about where the two cost the same when the file is in the page cache.
constexpr int64_t kSparseCleanDen = 16;

}  // namespace

RowLog::RowLog(std::string path, int64_t row_bytes, int64_t block_size, int64_t segment_bytes, bool background)
    : path_(std::move(path)), row_bytes_(row_bytes), block_size_(block_size), background_(background) {
  if (row_bytes_ <= block_size_) {
    per_block_ = block_size_ / row_bytes_;
    stride_ = row_bytes_;
    const int64_t blocks = std::max<int64_t>(1, segment_bytes / block_size_);
    seg_rows_ = blocks * per_block_;
    seg_bytes_ = blocks * block_size_;
  } else {
    per_block_ = 0;
    stride_ = (row_bytes_ + block_size_ - 1) / block_size_ * block_size_;
    seg_rows_ = std::max<int64_t>(1, segment_bytes / stride_);
    seg_bytes_ = seg_rows_ * stride_;
  }
  // O_NOATIME: every row miss is a pread, and updating the file's access time on each was a visible share of
  // its kernel time; the file is ours (just created), so the flag is allowed, but fall back if a filesystem
  // refuses it.
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOATIME, 0644);
  if (fd_ < 0 && errno == EPERM) fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error(errno_text("cannot create the embedding's data file", path_));
  if (const char* e = std::getenv("FLOW_EMBEDDING_MMAP"); e && std::string(e) == "0") map_segments_ = false;
  buf_.resize(static_cast<size_t>(seg_bytes_));
  if (background_) {
    spare_.resize(static_cast<size_t>(seg_bytes_));
    writer_ = std::thread([this] { writer_loop(); });
  }
  open_segment();
}

RowLog::~RowLog() {
  if (writer_.joinable()) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    writer_.join();
  }
  ::close(fd_);
  ::unlink(path_.c_str());
}

int64_t RowLog::record_offset(int64_t rec) const {
  const int64_t seg = rec / seg_rows_, r = rec % seg_rows_;
  const int64_t in_seg = per_block_ ? (r / per_block_) * block_size_ + (r % per_block_) * row_bytes_ : r * stride_;
  return seg * seg_bytes_ + in_seg;
}

const unsigned char* RowLog::in_memory(int64_t rec) const {
  const int64_t seg = rec / seg_rows_;
  const unsigned char* base = seg == cur_ ? buf_.data() : (seg == inflight_ ? spare_.data() : nullptr);
  return base ? base + (record_offset(rec) - seg * seg_bytes_) : nullptr;
}

void RowLog::io(bool write, void* buf, size_t bytes, int64_t off) const {
  auto* p = static_cast<char*>(buf);
  while (bytes) {
    const ssize_t r = write ? ::pwrite(fd_, p, bytes, off) : ::pread(fd_, p, bytes, off);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0)
      throw std::runtime_error(
          errno_text(write ? "cannot write embedding rows to" : "cannot read embedding rows from", path_));
    p += r;
    off += r;
    bytes -= static_cast<size_t>(r);
  }
}

void RowLog::append(int64_t slot, const unsigned char* row) {
  if (fill_ == seg_rows_) seal();
  const int64_t rec = cur_ * seg_rows_ + fill_;
  std::memcpy(buf_.data() + (record_offset(rec) - cur_ * seg_bytes_), row, static_cast<size_t>(row_bytes_));
  if (slot >= static_cast<int64_t>(where_.size())) where_.resize(static_cast<size_t>(slot) + 1, -1);
  if (where_[slot] >= 0) --seg_live_[segment_of(slot)];
  else ++live_;
  where_[slot] = rec;
  rec_slot_[rec] = slot;
  ++seg_live_[cur_];
  ++fill_;
}

void RowLog::read(int64_t slot, unsigned char* dst) const { read_batch(&slot, &dst, 1); }

void RowLog::read_batch(const int64_t* slots, unsigned char* const* dsts, int64_t n) const {
  // rows still in RAM are copied; the others are read in file order (the kernel's readahead and the page cache's
  // locality favour ascending offsets)
  std::vector<std::pair<int64_t, unsigned char*>> disk;
  disk.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    if (!has(slots[i])) throw std::logic_error("row log: slot " + std::to_string(slots[i]) + " was never written");
    const int64_t rec = where_[slots[i]];
    if (const unsigned char* m = in_memory(rec)) std::memcpy(dsts[i], m, static_cast<size_t>(row_bytes_));
    else disk.emplace_back(record_offset(rec), dsts[i]);
  }
  std::sort(disk.begin(), disk.end());
  auto read_range = [&](size_t lo, size_t hi) {
    for (size_t i = lo; i < hi; ++i) io(false, disk[i].second, static_cast<size_t>(row_bytes_), disk[i].first);
  };
  // Many misses are read by two threads: each pread is mostly the call's fixed cost, which a second core halves.
  if (disk.size() < 256) return read_range(0, disk.size());
  const size_t mid = disk.size() / 2;
  std::exception_ptr err;
  std::thread helper([&] {
    try {
      read_range(mid, disk.size());
    } catch (...) {
      err = std::current_exception();
    }
  });
  try {
    read_range(0, mid);
  } catch (...) {
    helper.join();
    throw;
  }
  helper.join();
  if (err) std::rethrow_exception(err);
}

void RowLog::open_segment() {
  if (!free_segs_.empty()) {
    cur_ = free_segs_.back();
    free_segs_.pop_back();
  } else {
    cur_ = nsegs_++;
    seg_live_.push_back(0);
    seg_free_.push_back(0);
    rec_slot_.resize(static_cast<size_t>(nsegs_ * seg_rows_), -1);
  }
  seg_free_[cur_] = 0;
  seg_live_[cur_] = 0;
  fill_ = 0;
}

void RowLog::seal() {
  if (background_) {
    wait_writer();
    std::swap(buf_, spare_);
    {
      std::lock_guard<std::mutex> lk(mu_);
      inflight_ = cur_;
      job_ = true;
    }
    cv_.notify_all();
  } else {
    io(true, buf_.data(), static_cast<size_t>(seg_bytes_), cur_ * seg_bytes_);
  }
  open_segment();
  if (!cleaning_) clean_if_needed();
}

void RowLog::clean_if_needed() {
  struct Guard {
    bool& flag;
    explicit Guard(bool& f) : flag(f) { flag = true; }
    ~Guard() { flag = false; }
  } guard(cleaning_);
  for (;;) {
    const int64_t used = nsegs_ - static_cast<int64_t>(free_segs_.size());
    if (used * seg_rows_ * kSpaceDen <= kSpaceNum * live_ + kSlackSegments * seg_rows_ * kSpaceDen) return;
    int64_t victim = -1;
    for (int64_t s = 0; s < nsegs_; ++s)
      if (!seg_free_[s] && s != cur_ && s != inflight_ && (victim < 0 || seg_live_[s] < seg_live_[victim])) victim = s;
    if (victim < 0 || seg_live_[victim] * 8 >= seg_rows_ * 7) return;  // nothing worth reclaiming
    clean(victim);
  }
}

void RowLog::clean(int64_t victim) {
  if (seg_live_[victim] > 0) {
    std::optional<FileRange> map;
    if (map_segments_) {
      map.emplace(fd_, victim * seg_bytes_, seg_bytes_);
      if (!map->data) map.reset();
    }
    // Without the mapping: the emptiest segment usually holds only a few live records (rows evicted once and
    // never again), which are read one by one, far cheaper than reading the whole segment to copy them forward.
    const bool sparse = !map && seg_live_[victim] * kSparseCleanDen < seg_rows_;
    if (sparse) {
      clean_buf_.resize(static_cast<size_t>(row_bytes_));
      ++sparse_cleans_;
    } else if (!map) {
      clean_buf_.resize(static_cast<size_t>(seg_bytes_));
      io(false, clean_buf_.data(), static_cast<size_t>(seg_bytes_), victim * seg_bytes_);
    }
    const unsigned char* whole = map ? map->data : clean_buf_.data();
    for (int64_t r = 0; r < seg_rows_; ++r) {
      const int64_t rec = victim * seg_rows_ + r, slot = rec_slot_[rec];
      if (slot < 0 || where_[slot] != rec) continue;  // dead: a newer copy exists
      const unsigned char* row;
      if (sparse) {
        io(false, clean_buf_.data(), static_cast<size_t>(row_bytes_), record_offset(rec));
        row = clean_buf_.data();
      } else {
        row = whole + (record_offset(rec) - victim * seg_bytes_);
      }
      append(slot, row);
      ++moved_;
    }
  }
  std::fill(rec_slot_.begin() + victim * seg_rows_, rec_slot_.begin() + (victim + 1) * seg_rows_, -1);
  seg_free_[victim] = 1;
  free_segs_.push_back(victim);
  ++cleaned_;
}

void RowLog::wait_writer() {
  std::unique_lock<std::mutex> lk(mu_);
  cv_.wait(lk, [this] { return !job_; });
  if (error_) {
    std::exception_ptr e = std::exchange(error_, nullptr);
    std::rethrow_exception(e);
  }
}

void RowLog::writer_loop() {
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    cv_.wait(lk, [this] { return stop_ || job_; });
    if (stop_) return;
    const int64_t seg = inflight_;
    lk.unlock();
    std::exception_ptr err;
    try {  // `spare_` is not touched by the store's thread until job_ clears
      io(true, spare_.data(), static_cast<size_t>(seg_bytes_), seg * seg_bytes_);
    } catch (...) {
      err = std::current_exception();
    }
    lk.lock();
    if (err && !error_) error_ = err;
    job_ = false;
    cv_.notify_all();
  }
}

void RowLog::sync() {
  if (background_) wait_writer();
  if (fill_ > 0) {
    const int64_t end = record_offset(cur_ * seg_rows_ + fill_ - 1) + row_bytes_ - cur_ * seg_bytes_;
    io(true, buf_.data(), static_cast<size_t>(end), cur_ * seg_bytes_);
  }
}

LogStats RowLog::stats() const {
  LogStats s;
  struct stat st{};
  s.file_bytes = ::fstat(fd_, &st) == 0 ? static_cast<int64_t>(st.st_size) : nsegs_ * seg_bytes_;
  s.live_bytes = live_ * row_bytes_;
  s.segments_cleaned = cleaned_;
  s.rows_moved = moved_;
  s.sparse_cleans = sparse_cleans_;
  return s;
}

}  // namespace flow_embedding
