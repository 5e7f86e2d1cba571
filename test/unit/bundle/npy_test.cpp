#include "bundle/npy.h"

#include "support/test_bundle.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

namespace llmserve {
namespace {

using ::testing::HasSubstr;
using test::fs::path;

std::string read_error(const path &file) {
  try {
    read_npy(file.string());
  } catch (const std::runtime_error &e) {
    return e.what();
  }
  return "(read)";
}

// An .npy file as numpy writes it: magic, version, header length, header.
std::string npy_bytes(int major, const std::string &header, const std::string &data) {
  std::string bytes = "\x93NUMPY";
  bytes += static_cast<char>(major);
  bytes += '\0';
  const size_t len = header.size();
  bytes += static_cast<char>(len & 0xff);
  bytes += static_cast<char>(len >> 8);
  if (major >= 2)
    bytes += std::string(2, '\0');
  return bytes + header + data;
}

TEST(Npy, RoundTripsEveryDtype) {
  const path dir = test::fresh_dir();
  const std::vector<std::vector<int64_t>> shapes = {{}, {3}, {2, 3}, {2, 1, 4}, {0, 5}};
  for (DType dtype : {DType::F32, DType::F16, DType::I32, DType::I64}) {
    for (const auto &shape : shapes) {
      HostTensor t{dtype, shape, {}};
      size_t n = dtype_size(dtype);
      for (int64_t d : shape)
        n *= static_cast<size_t>(d);
      for (size_t i = 0; i < n; ++i)
        t.data.push_back(static_cast<uint8_t>(i * 37 + 11));
      const path file = dir / "t.npy";
      write_npy(file.string(), t);
      // numpy pads the header so the data starts at a multiple of 64.
      EXPECT_EQ((test::fs::file_size(file) - n) % 64, 0u);
      const HostTensor back = read_npy(file.string());
      EXPECT_EQ(back.dtype, dtype);
      EXPECT_EQ(back.shape, shape);
      EXPECT_EQ(back.data, t.data);
    }
  }
}

TEST(Npy, ReadsWhatNumpyWrites) {
  const path dir = test::fresh_dir();
  const float values[] = {1.5f, -2.0f};
  const std::string data(reinterpret_cast<const char *>(values), sizeof values);
  // numpy.save of np.array([[1.5], [-2.0]], dtype=np.float32), and the same
  // in format 2.0 with double quotes and no trailing comma.
  test::write_file(dir / "v1.npy",
                   npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 1), }"
                                "          \n", data));
  test::write_file(dir / "v2.npy",
                   npy_bytes(2, "{\"shape\": (2,1), \"descr\": \"<f4\", \"fortran_order\": False}\n",
                             data));
  for (const char *name : {"v1.npy", "v2.npy"}) {
    const HostTensor t = read_npy((dir / name).string());
    EXPECT_EQ(t.dtype, DType::F32) << name;
    EXPECT_EQ(t.shape, (std::vector<int64_t>{2, 1})) << name;
    EXPECT_EQ(std::memcmp(t.data.data(), values, sizeof values), 0) << name;
  }
}

TEST(Npy, RefusesWhatItCannotRead) {
  const path dir = test::fresh_dir();
  const std::string four(4, '\0');
  const auto with_header = [&](const std::string &header, const std::string &data = "") {
    test::write_file(dir / "t.npy", npy_bytes(1, header, data));
    return read_error(dir / "t.npy");
  };
  EXPECT_THAT(read_error(dir / "absent.npy"), HasSubstr("absent.npy: cannot open"));
  test::write_file(dir / "t.npy", "PK\x03\x04 a zip file");
  EXPECT_THAT(read_error(dir / "t.npy"), HasSubstr("t.npy: not a .npy file"));
  test::write_file(dir / "t.npy", npy_bytes(4, "{}", ""));
  EXPECT_THAT(read_error(dir / "t.npy"), HasSubstr(".npy format version 4 is not supported"));
  test::write_file(dir / "t.npy", npy_bytes(1, "{'descr': '<f4'", "").substr(0, 14));
  EXPECT_THAT(read_error(dir / "t.npy"), HasSubstr("truncated .npy header"));
  EXPECT_THAT(with_header("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", four),
              HasSubstr("dtype '>f4' is not supported"));
  EXPECT_THAT(with_header("{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", four),
              HasSubstr("dtype '<f8' is not supported"));
  EXPECT_THAT(with_header("{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }", four),
              HasSubstr("Fortran-order arrays are not supported"));
  EXPECT_THAT(with_header("{'descr': '<f4', 'shape': (1,), }", four),
              HasSubstr("header lacks 'descr', 'fortran_order' or 'shape'"));
  EXPECT_THAT(with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (a,), }", four),
              HasSubstr("bad shape"));
  EXPECT_THAT(with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", four),
              HasSubstr("unexpected key 'x'"));
  EXPECT_THAT(with_header("{'descr: '<f4'", four), HasSubstr("bad .npy header"));
  EXPECT_THAT(with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", four),
              HasSubstr("4 bytes of data, f32 [2, 3] needs 24"));
  EXPECT_THAT(with_header("{'descr': '<i8', 'fortran_order': False, "
                          "'shape': (4611686018427387904, 4), }"),
              HasSubstr("too large"));
}

TEST(Npy, RefusesToWriteWhatNumpyCannotRead) {
  const path dir = test::fresh_dir();
  const auto write_error = [&](const HostTensor &t, const path &file) {
    try {
      write_npy(file.string(), t);
    } catch (const std::runtime_error &e) {
      return std::string(e.what());
    }
    return std::string("(written)");
  };
  EXPECT_THAT(write_error({DType::BF16, {1}, {0, 0}}, dir / "t.npy"),
              HasSubstr("numpy has no dtype for bf16"));
  EXPECT_THAT(write_error({DType::F32, {2}, {0, 0, 0, 0}}, dir / "t.npy"),
              HasSubstr("4 bytes of data for f32 [2]"));
  EXPECT_THAT(write_error({DType::F32, {1}, {0, 0, 0, 0}}, dir / "no" / "such" / "t.npy"),
              HasSubstr("cannot create"));
}

} // namespace
} // namespace llmserve
