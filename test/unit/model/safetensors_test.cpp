#include "model/safetensors.h"

#include "support/safetensors_writer.h"
#include "support/temp_dir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>

namespace llmserve {
namespace {

using ::testing::HasSubstr;
using test::fresh_dir;
using test::safetensors_bytes;
using test::write_file;

TensorView view(const std::string &name, DType dtype, std::vector<int64_t> shape,
                const void *data, size_t nbytes) {
  return TensorView{name, dtype, std::move(shape),
                    static_cast<const uint8_t *>(data), nbytes};
}

// Opens `bytes` as a safetensors file; returns the error message, which must
// name the file.
std::string open_error(const std::string &bytes) {
  auto path = (fresh_dir() / "bad.safetensors").string();
  write_file(path, bytes);
  try {
    SafetensorsFile::open(path);
  } catch (const std::runtime_error &e) {
    EXPECT_THAT(e.what(), HasSubstr(path));
    return e.what();
  }
  ADD_FAILURE() << "opened a malformed file";
  return "";
}

// A valid two-tensor file: "a" is f32 [2] and "b" is f16 [3].
std::string two_tensor_header(const std::string &a_offsets = "[0,8]",
                              const std::string &b_offsets = "[8,14]") {
  return R"({"a":{"dtype":"F32","shape":[2],"data_offsets":)" + a_offsets +
         R"(},"b":{"dtype":"F16","shape":[3],"data_offsets":)" + b_offsets + "}}";
}

TEST(Safetensors, WritesAndReadsBack) {
  const float a[] = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f, 8.0f};
  const uint16_t b[] = {0x3c00, 0xc000, 0x7bff};
  const int64_t c[] = {-1, 1LL << 40};
  auto path = (fresh_dir() / "w.safetensors").string();
  write_safetensors(path, {view("z.weight", DType::F32, {2, 3}, a, sizeof a),
                           view("a.bias", DType::BF16, {3}, b, sizeof b),
                           view("ids", DType::I64, {2}, c, sizeof c),
                           view("empty", DType::F16, {0, 4}, nullptr, 0)});

  SafetensorsFile file = SafetensorsFile::open(path);
  EXPECT_EQ(file.path(), path);
  ASSERT_EQ(file.tensors().size(), 4u);
  EXPECT_EQ(file.tensors()[0].name, "a.bias"); // sorted by name
  const TensorView *z = file.find("z.weight");
  ASSERT_NE(z, nullptr);
  EXPECT_EQ(z->dtype, DType::F32);
  EXPECT_EQ(z->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(z->numel(), 6);
  ASSERT_EQ(z->nbytes, sizeof a);
  EXPECT_EQ(std::memcmp(z->data, a, sizeof a), 0);
  const TensorView *ids = file.find("ids");
  ASSERT_NE(ids, nullptr);
  EXPECT_EQ(std::memcmp(ids->data, c, sizeof c), 0);
  EXPECT_EQ(file.find("a.bias")->dtype, DType::BF16);
  EXPECT_EQ(file.find("empty")->nbytes, 0u);
  EXPECT_EQ(file.find("missing"), nullptr);
  EXPECT_EQ(file.find("a"), nullptr);
}

TEST(Safetensors, WriterPadsHeaderToEightBytesWithFormatMetadata) {
  const float a[] = {1.0f};
  auto path = fresh_dir() / "w.safetensors";
  write_safetensors(path.string(), {view("a", DType::F32, {1}, a, 4)});
  std::string bytes = test::read_file(path);
  uint64_t header_length;
  std::memcpy(&header_length, bytes.data(), 8);
  EXPECT_EQ(header_length % 8, 0u);
  EXPECT_EQ(bytes.size(), 8 + header_length + 4);
  EXPECT_THAT(bytes.substr(8, header_length),
              HasSubstr(R"("__metadata__":{"format":"pt"})"));
}

TEST(Safetensors, MoveKeepsViewsValid) {
  const float a[] = {4.0f, 5.0f};
  auto path = (fresh_dir() / "m.safetensors").string();
  write_safetensors(path, {view("a", DType::F32, {2}, a, sizeof a)});
  SafetensorsFile first = SafetensorsFile::open(path);
  const TensorView *t = first.find("a");
  SafetensorsFile second = std::move(first);
  SafetensorsFile third = SafetensorsFile::open(path);
  third = std::move(second);
  EXPECT_EQ(third.find("a"), t);
  EXPECT_EQ(std::memcmp(t->data, a, sizeof a), 0);
}

TEST(Safetensors, ReleaseKeepsContentsReadable) {
  std::vector<float> big(1 << 16);
  for (size_t i = 0; i < big.size(); ++i)
    big[i] = static_cast<float>(i);
  auto path = (fresh_dir() / "r.safetensors").string();
  write_safetensors(path, {view("big", DType::F32, {1 << 16}, big.data(), big.size() * 4)});
  SafetensorsFile file = SafetensorsFile::open(path);
  const TensorView &t = file.tensors()[0];
  file.release(t);
  EXPECT_EQ(std::memcmp(t.data, big.data(), t.nbytes), 0);

  // A view into other memory is refused: dropping its pages would zero it.
  const TensorView foreign = view("big", DType::F32, {1 << 16}, big.data(), big.size() * 4);
  try {
    file.release(foreign);
    ADD_FAILURE();
  } catch (const std::runtime_error &e) {
    EXPECT_EQ(std::string(e.what()), path + ": tensor 'big': is not a tensor of this file");
  }
  EXPECT_EQ(big[12345], 12345.0f);
}

TEST(Safetensors, ReadsHeaderPaddedWithSpacesAndEmptyFile) {
  std::string header = two_tensor_header() + "    ";
  auto dir = fresh_dir();
  write_file(dir / "p.safetensors", safetensors_bytes(header, std::string(14, '\0')));
  EXPECT_EQ(SafetensorsFile::open((dir / "p.safetensors").string()).tensors().size(), 2u);
  write_file(dir / "e.safetensors", safetensors_bytes(R"({"__metadata__":{"k":"v"}})", ""));
  EXPECT_TRUE(SafetensorsFile::open((dir / "e.safetensors").string()).tensors().empty());
}

TEST(Safetensors, KeepsUnreadableDtypesOutOfTensors) {
  std::string header =
      R"({"d":{"dtype":"F64","shape":[1],"data_offsets":[0,8]},)"
      R"("m":{"dtype":"BOOL","shape":[2],"data_offsets":[8,10]}})";
  auto path = (fresh_dir() / "u.safetensors").string();
  write_file(path, safetensors_bytes(header, std::string(10, '\0')));
  SafetensorsFile file = SafetensorsFile::open(path);
  EXPECT_TRUE(file.tensors().empty());
  EXPECT_STREQ(file.unreadable_dtype("d"), "F64");
  EXPECT_STREQ(file.unreadable_dtype("m"), "BOOL");
  EXPECT_EQ(file.unreadable_dtype("x"), nullptr);
}

TEST(SafetensorsErrors, MissingFileAndDirectory) {
  auto dir = fresh_dir();
  EXPECT_THAT(open_error(""), HasSubstr("too short"));
  try {
    SafetensorsFile::open((dir / "nope.safetensors").string());
    ADD_FAILURE();
  } catch (const std::runtime_error &e) {
    EXPECT_THAT(e.what(), HasSubstr("nope.safetensors: cannot open"));
  }
  try {
    SafetensorsFile::open(dir.string());
    ADD_FAILURE();
  } catch (const std::runtime_error &e) {
    EXPECT_THAT(e.what(), HasSubstr("not a regular file"));
  }
}

TEST(SafetensorsErrors, HeaderLength) {
  EXPECT_THAT(open_error("\x05\0\0\0"), HasSubstr("too short"));
  EXPECT_THAT(open_error(safetensors_bytes(1ULL << 40, "{}", "")),
              HasSubstr("exceeds the limit"));
  EXPECT_THAT(open_error(safetensors_bytes(64, "{}", "")),
              HasSubstr("header length 64 runs past the end of the file"));
  EXPECT_THAT(open_error(safetensors_bytes(0, "", "")), HasSubstr("does not start with '{'"));
  EXPECT_THAT(open_error(safetensors_bytes("[]", "")), HasSubstr("does not start with '{'"));
}

TEST(SafetensorsErrors, HeaderJson) {
  EXPECT_THAT(open_error(safetensors_bytes("{\"a\":", "")), HasSubstr("not valid JSON"));
  EXPECT_THAT(open_error(safetensors_bytes("{} x", "")), HasSubstr("not valid JSON"));
  EXPECT_THAT(open_error(safetensors_bytes(R"({"__metadata__":[1]})", "")),
              HasSubstr("'__metadata__' is not a JSON object"));
  EXPECT_THAT(open_error(safetensors_bytes(R"({"__metadata__":{"k":1}})", "")),
              HasSubstr("'__metadata__' value of 'k' is not a string"));
  EXPECT_THAT(open_error(safetensors_bytes(R"({"w":[1]})", "")),
              HasSubstr("tensor 'w': header entry is not a JSON object"));
  // Deep nesting is parsed and freed without recursion.
  const size_t depth = 200000;
  EXPECT_THAT(open_error(safetensors_bytes(
                  "{\"w\":" + std::string(depth, '[') + std::string(depth, ']') + "}", "")),
              HasSubstr("tensor 'w': header entry is not a JSON object"));
}

TEST(SafetensorsErrors, Dtype) {
  EXPECT_THAT(open_error(safetensors_bytes(R"({"w":{"shape":[],"data_offsets":[0,0]}})", "")),
              HasSubstr("tensor 'w': missing string field 'dtype'"));
  EXPECT_THAT(open_error(safetensors_bytes(
                  R"({"w":{"dtype":4,"shape":[],"data_offsets":[0,0]}})", "")),
              HasSubstr("tensor 'w': missing string field 'dtype'"));
  EXPECT_THAT(open_error(safetensors_bytes(
                  R"({"w":{"dtype":"F24","shape":[1],"data_offsets":[0,3]}})", "   ")),
              HasSubstr("tensor 'w': unknown dtype 'F24'"));
}

TEST(SafetensorsErrors, Shape) {
  auto with_shape = [](const std::string &shape) {
    return open_error(safetensors_bytes(
        R"({"w":{"dtype":"F32","shape":)" + shape + R"(,"data_offsets":[0,4]}})",
        std::string(4, '\0')));
  };
  EXPECT_THAT(open_error(safetensors_bytes(
                  R"({"w":{"dtype":"F32","data_offsets":[0,4]}})", "1234")),
              HasSubstr("tensor 'w': missing array field 'shape'"));
  EXPECT_THAT(with_shape("4"), HasSubstr("missing array field 'shape'"));
  EXPECT_THAT(with_shape("[-1]"), HasSubstr("tensor 'w': shape entry -1 is not"));
  EXPECT_THAT(with_shape("[1.5]"), HasSubstr("shape entry 1.5 is not"));
  EXPECT_THAT(with_shape("[\"1\"]"), HasSubstr("is not a non-negative integer"));
  EXPECT_THAT(with_shape("[18446744073709551615]"), HasSubstr("is not a non-negative integer"));
  EXPECT_THAT(with_shape("[4294967296,4294967296]"), HasSubstr("tensor 'w': shape [4294967296,4294967296] overflows"));
  EXPECT_THAT(with_shape("[4611686018427387904]"), HasSubstr("overflows")); // * 4 bytes
  EXPECT_THAT(with_shape("[2]"), HasSubstr("span 4 bytes but shape [2] of F32 needs 8"));
}

TEST(SafetensorsErrors, DataOffsets) {
  const std::string message = "tensor 'w': 'data_offsets' must be two non-negative integers";
  EXPECT_THAT(open_error(safetensors_bytes(R"({"w":{"dtype":"F32","shape":[1]}})", "1234")),
              HasSubstr(message));
  EXPECT_THAT(open_error(safetensors_bytes(
                  R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", "1234")),
              HasSubstr(message));
  EXPECT_THAT(open_error(safetensors_bytes(
                  R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}})", "1234")),
              HasSubstr(message));
  EXPECT_THAT(open_error(safetensors_bytes(
                  R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}})", "1234")),
              HasSubstr(message));
  EXPECT_THAT(open_error(safetensors_bytes(
                  R"({"w":{"dtype":"F32","shape":[1],"data_offsets":"0,4"}})", "1234")),
              HasSubstr(message));
  EXPECT_THAT(open_error(safetensors_bytes(
                  R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[4,0]}})", "1234")),
              HasSubstr("tensor 'w': data_offsets [4,0] end before they begin"));
  EXPECT_THAT(open_error(safetensors_bytes(
                  R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", "1234")),
              HasSubstr("tensor 'w': data_offsets [0,8] run past the data section (4 bytes"));
  EXPECT_THAT(open_error(safetensors_bytes(
                  R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,18446744073709551615]}})",
                  "1234")),
              HasSubstr("run past the data section"));
}

TEST(SafetensorsErrors, LayoutMustTileTheDataSection) {
  const std::string data(14, '\0');
  EXPECT_THAT(open_error(safetensors_bytes(two_tensor_header("[0,8]", "[6,12]"), data)),
              HasSubstr("tensor 'b': bytes [6, 12) overlap tensor 'a'"));
  EXPECT_THAT(open_error(safetensors_bytes(two_tensor_header("[0,8]", "[0,6]"), data)),
              HasSubstr("overlap tensor"));
  // Offsets need not follow name order.
  auto path = (fresh_dir() / "swapped.safetensors").string();
  write_file(path, safetensors_bytes(two_tensor_header("[6,14]", "[0,6]"), data));
  EXPECT_EQ(SafetensorsFile::open(path).tensors().size(), 2u);
  EXPECT_THAT(open_error(safetensors_bytes(two_tensor_header("[2,10]", "[10,16]"),
                                           std::string(16, '\0'))),
              HasSubstr("tensor 'a': starts at byte 2 but the previous tensor ends at 0"));
  EXPECT_THAT(open_error(safetensors_bytes(two_tensor_header("[0,8]", "[9,15]"),
                                           std::string(15, '\0'))),
              HasSubstr("tensor 'b': starts at byte 9 but the previous tensor ends at 8"));
  EXPECT_THAT(open_error(safetensors_bytes(two_tensor_header(), std::string(17, '\0'))),
              HasSubstr("3 trailing bytes after the last tensor"));
}

// Every prefix of a valid file is an error, never a crash or a read past the
// mapping (run under ASan to see the latter).
TEST(SafetensorsErrors, EveryTruncationIsAnError) {
  const std::string bytes = safetensors_bytes(two_tensor_header(), std::string(14, '\x11'));
  auto path = (fresh_dir() / "t.safetensors").string();
  for (size_t n = 0; n < bytes.size(); ++n) {
    write_file(path, bytes.substr(0, n));
    EXPECT_THROW(SafetensorsFile::open(path), std::runtime_error) << "prefix " << n;
  }
  write_file(path, bytes);
  EXPECT_EQ(SafetensorsFile::open(path).tensors().size(), 2u);
}

// Random corruption of the header bytes: the file opens with every tensor
// inside the data section, or it fails with a runtime_error.
TEST(SafetensorsErrors, CorruptHeadersNeverEscapeTheFile) {
  const std::string bytes = safetensors_bytes(two_tensor_header(), std::string(14, '\x11'));
  auto path = (fresh_dir() / "c.safetensors").string();
  std::mt19937 rng(7);
  const char alphabet[] = "0123456789[]{},:\"-.eFBI ";
  int opened = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::string corrupt = bytes;
    for (int k = 0; k < 1 + trial % 3; ++k) {
      size_t at = rng() % (bytes.size() - 14);
      corrupt[at] = trial % 2 ? static_cast<char>(rng())
                              : alphabet[rng() % (sizeof alphabet - 1)];
    }
    write_file(path, corrupt);
    try {
      SafetensorsFile file = SafetensorsFile::open(path);
      ++opened;
      for (const TensorView &t : file.tensors()) {
        EXPECT_EQ(t.nbytes, static_cast<size_t>(t.numel()) * dtype_size(t.dtype));
        (void)std::count(t.data, t.data + t.nbytes, 0x11); // touches every byte
      }
    } catch (const std::runtime_error &e) {
      EXPECT_THAT(e.what(), HasSubstr(path));
    }
  }
  EXPECT_GT(opened, 0); // some corruptions (e.g. of a name) stay valid
}

TEST(SafetensorsWriterErrors, RejectsBadTensorsAndPaths) {
  const float a[] = {1.0f, 2.0f};
  auto dir = fresh_dir();
  auto path = (dir / "w.safetensors").string();
  auto write_error = [&](const std::vector<TensorView> &tensors,
                         const std::string &to) -> std::string {
    try {
      write_safetensors(to, tensors);
    } catch (const std::runtime_error &e) {
      return e.what();
    }
    ADD_FAILURE() << "wrote a bad file";
    return "";
  };
  EXPECT_THAT(write_error({view("a", DType::F32, {2}, a, 8), view("a", DType::F32, {2}, a, 8)}, path),
              HasSubstr("tensor 'a': duplicate or reserved tensor name"));
  EXPECT_THAT(write_error({view("__metadata__", DType::F32, {2}, a, 8)}, path),
              HasSubstr("duplicate or reserved"));
  EXPECT_THAT(write_error({view("a", DType::F32, {3}, a, 8)}, path),
              HasSubstr("tensor 'a': 8 bytes do not match its shape"));
  EXPECT_THAT(write_error({view("a", DType::F32, {-2}, a, 8)}, path),
              HasSubstr("tensor 'a': negative dimension -2"));
  EXPECT_THAT(write_error({view("a", DType::F32, {2}, a, 8)}, (dir / "no" / "w.safetensors").string()),
              HasSubstr("cannot create"));
  std::filesystem::create_directory(dir / "taken");
  EXPECT_THAT(write_error({view("a", DType::F32, {2}, a, 8)}, (dir / "taken").string()),
              HasSubstr("taken: cannot write: Is a directory"));
  EXPECT_FALSE(std::filesystem::exists(dir / "taken.tmp"));
  EXPECT_FALSE(std::filesystem::exists(path));
}

} // namespace
} // namespace llmserve
