// nanobind module oneflow_embedding._store: the key-value store over NumPy buffers (flow tensors reach it
// through .numpy(), which shares their memory). C++ errors become Python exceptions: invalid_argument ->
// ValueError, out_of_range -> IndexError, length_error (capacity) and runtime_error -> RuntimeError.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <stdexcept>
#include <string>
#include <tuple>

#include "kv_store.h"
#include "store_handles.h"

namespace nb = nanobind;
using namespace flow_embedding;

namespace {

using I32 = nb::ndarray<const int32_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using I64 = nb::ndarray<const int64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using F32In = nb::ndarray<const float, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
using F32Out = nb::ndarray<float, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
using I32Out = nb::ndarray<int32_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using I64Out = nb::ndarray<int64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

void same_length(size_t a, size_t b, const char* what) {
  if (a != b) throw std::invalid_argument(std::string(what) + ": ids and table_ids differ in length");
}

void check_rows(size_t n, size_t rows, size_t cols, int64_t want_cols, const char* what) {
  if (rows != n || static_cast<int64_t>(cols) != want_cols)
    throw std::invalid_argument(std::string(what) + ": expected a (" + std::to_string(n) + ", " +
                                std::to_string(want_cols) + ") float32 buffer, got (" + std::to_string(rows) + ", " +
                                std::to_string(cols) + ")");
}

std::vector<std::vector<InitSegment>> to_tables(
    const std::vector<std::vector<std::tuple<int64_t, int64_t, int, double, double>>>& spec) {
  std::vector<std::vector<InitSegment>> out;
  for (const auto& t : spec) {
    std::vector<InitSegment> segs;
    for (const auto& [start, len, kind, a, b] : t) {
      if (kind < 0 || kind > 2) throw std::invalid_argument("unknown initializer kind");
      segs.push_back(InitSegment{start, len, static_cast<InitKind>(kind), a, b});
    }
    out.push_back(std::move(segs));
  }
  return out;
}

}  // namespace

NB_MODULE(_store, m) {
  m.doc() = "The C++ key-value store of oneflow_embedding (one table shard per Store)";
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const std::length_error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });

  // the methods live on the base; the bound class registers each store in the handle table the ops read
  nb::class_<Store>(m, "_StoreBase")
      .def("lookup",
           [](Store& s, I32 tables, I64 ids, F32Out out, bool has_padding, int64_t padding_idx) {
    same_length(tables.shape(0), ids.shape(0), "lookup");
    check_rows(ids.shape(0), out.shape(0), out.shape(1), s.dim(), "lookup output");
    nb::gil_scoped_release nogil;
    s.lookup(tables.data(), ids.data(), static_cast<int64_t>(ids.shape(0)), out.data(), has_padding, padding_idx);
  }, nb::arg("tables"), nb::arg("ids"), nb::arg("out"), nb::arg("has_padding"), nb::arg("padding_idx"))
      .def("update",
           [](Store& s, I32 tables, I64 ids, F32In grads, int kind, const std::vector<double>& hyper, bool has_padding,
              int64_t padding_idx) {
    same_length(tables.shape(0), ids.shape(0), "update");
    check_rows(ids.shape(0), grads.shape(0), grads.shape(1), s.dim(), "update gradient");
    if (kind < 0 || kind > 3) throw std::invalid_argument("unknown optimizer kind");
    nb::gil_scoped_release nogil;
    s.update(tables.data(), ids.data(), static_cast<int64_t>(ids.shape(0)), grads.data(), static_cast<OptKind>(kind),
             hyper, has_padding, padding_idx);
  },
           nb::arg("tables"), nb::arg("ids"), nb::arg("grads"), nb::arg("kind"), nb::arg("hyper"),
           nb::arg("has_padding"), nb::arg("padding_idx"))
      .def("export_rows",
           [](Store& s, int64_t start, I32Out tables, I64Out ids, F32Out rows) {
    const size_t n = ids.shape(0);
    same_length(tables.shape(0), n, "export_rows");
    check_rows(n, rows.shape(0), rows.shape(1), s.row_floats(), "export_rows rows");
    nb::gil_scoped_release nogil;
    return s.export_rows(start, static_cast<int64_t>(n), tables.data(), ids.data(), rows.data());
  }, nb::arg("start"), nb::arg("tables"), nb::arg("ids"), nb::arg("rows"))
      .def("import_rows",
           [](Store& s, I32 tables, I64 ids, F32In rows) {
    same_length(tables.shape(0), ids.shape(0), "import_rows");
    check_rows(ids.shape(0), rows.shape(0), rows.shape(1), s.row_floats(), "import_rows rows");
    nb::gil_scoped_release nogil;
    s.import_rows(tables.data(), ids.data(), static_cast<int64_t>(ids.shape(0)), rows.data());
  }, nb::arg("tables"), nb::arg("ids"), nb::arg("rows"))
      .def("save",
           [](Store& s, const std::string& path) {
    nb::gil_scoped_release nogil;
    s.save(path);
  }, nb::arg("path"))
      .def("load",
           [](Store& s, const std::string& path) {
    nb::gil_scoped_release nogil;
    s.load(path);
  }, nb::arg("path"))
      .def("flush", &Store::flush)
      .def("__len__", &Store::size)
      .def_prop_ro("dim", &Store::dim)
      .def_prop_ro("row_floats", &Store::row_floats)
      .def_prop_ro("num_tables", &Store::num_tables)
      .def("stats",
           [](const Store& s) {
    const StoreStats st = s.stats();
    return std::make_tuple(st.hits, st.misses, st.evictions, st.writebacks);
  })
      .def("reset_stats", &Store::reset_stats)
      .def("log_stats", [](const Store& s) {
    const LogStats st = s.log_stats();
    return std::make_tuple(st.file_bytes, st.live_bytes, st.segments_cleaned, st.rows_moved, st.sparse_cleans);
  });

  nb::class_<HandledStore, Store>(m, "Store")
      .def("__init__",
           [](HandledStore* self, int64_t dim, int64_t row_floats, int64_t capacity, bool cached, int64_t cache_rows,
              const std::string& data_dir, int64_t block_size, uint64_t seed,
              const std::vector<std::vector<std::tuple<int64_t, int64_t, int, double, double>>>& tables, bool half,
              bool write_back_thread) {
    new (self) HandledStore(dim, row_floats, capacity, cached, cache_rows, data_dir, block_size, seed,
                            to_tables(tables), half, write_back_thread);
  },
           nb::arg("dim"), nb::arg("row_floats"), nb::arg("capacity"), nb::arg("cached"), nb::arg("cache_rows"),
           nb::arg("data_dir"), nb::arg("block_size"), nb::arg("seed"), nb::arg("tables"), nb::arg("half") = false,
           nb::arg("write_back_thread") = false)
      .def_prop_ro("handle", &HandledStore::handle);

  m.def("initial_value", [](uint64_t seed, int32_t table, int64_t id, int64_t col, int kind, double a, double b) {
    return initial_value(seed, table, id, col, InitSegment{0, 0, static_cast<InitKind>(kind), a, b});
  }, nb::arg("seed"), nb::arg("table"), nb::arg("id"), nb::arg("col"), nb::arg("kind"), nb::arg("a"), nb::arg("b"));
}
