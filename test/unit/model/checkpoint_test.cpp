#include "model/checkpoint.h"

#include "support/safetensors_writer.h"
#include "support/temp_dir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

namespace llmserve {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using test::fresh_dir;
using test::write_file;

const float kA[] = {1.0f, 2.0f, 3.0f, 4.0f};
const float kB[] = {5.0f, 6.0f};

TensorView view(const std::string &name, const float *data, int64_t n) {
  return TensorView{name, DType::F32, {n}, reinterpret_cast<const uint8_t *>(data),
                    static_cast<size_t>(n) * 4};
}

void write_index(const fs::path &dir, const std::string &weight_map) {
  write_file(dir / "model.safetensors.index.json",
              R"({"metadata":{"total_size":24},"weight_map":)" + weight_map + "}");
}

// A checkpoint with "a" in shard 1 and "b" in shard 2.
fs::path sharded_checkpoint() {
  fs::path dir = fresh_dir();
  write_safetensors((dir / "model-00001-of-00002.safetensors").string(), {view("a", kA, 4)});
  write_safetensors((dir / "model-00002-of-00002.safetensors").string(), {view("b", kB, 2)});
  write_index(dir, R"({"a":"model-00001-of-00002.safetensors","b":"model-00002-of-00002.safetensors"})");
  return dir;
}

std::string open_error(const fs::path &dir) {
  try {
    Checkpoint::open(dir.string());
  } catch (const std::runtime_error &e) {
    return e.what();
  }
  ADD_FAILURE() << "opened a bad checkpoint";
  return "";
}

TEST(Checkpoint, OpensSingleFile) {
  fs::path dir = fresh_dir();
  write_safetensors((dir / "model.safetensors").string(), {view("a", kA, 4), view("b", kB, 2)});
  Checkpoint ckpt = Checkpoint::open(dir.string());
  EXPECT_EQ(ckpt.dir(), dir.string());
  EXPECT_EQ(ckpt.tensor("b").nbytes, sizeof kB);
  EXPECT_EQ(std::memcmp(ckpt.tensor("a").data, kA, sizeof kA), 0);
  EXPECT_EQ(ckpt.find("c"), nullptr);
  ASSERT_EQ(ckpt.tensors().size(), 2u);
  EXPECT_EQ(ckpt.tensors()[0]->name, "a");
}

TEST(Checkpoint, OpensShards) {
  fs::path dir = sharded_checkpoint();
  Checkpoint ckpt = Checkpoint::open(dir.string());
  EXPECT_EQ(std::memcmp(ckpt.tensor("a").data, kA, sizeof kA), 0);
  EXPECT_EQ(std::memcmp(ckpt.tensor("b").data, kB, sizeof kB), 0);
  EXPECT_EQ(ckpt.tensors().size(), 2u);
  ckpt.release(ckpt.tensor("b"));
  EXPECT_EQ(std::memcmp(ckpt.tensor("b").data, kB, sizeof kB), 0);
}

TEST(Checkpoint, SingleFileTakesPrecedenceOverIndex) {
  fs::path dir = sharded_checkpoint();
  write_safetensors((dir / "model.safetensors").string(), {view("only", kB, 2)});
  Checkpoint ckpt = Checkpoint::open(dir.string());
  EXPECT_NE(ckpt.find("only"), nullptr);
  EXPECT_EQ(ckpt.find("a"), nullptr);
}

TEST(CheckpointErrors, MissingTensorNamesDirectoryAndTensor) {
  fs::path dir = sharded_checkpoint();
  Checkpoint ckpt = Checkpoint::open(dir.string());
  try {
    ckpt.tensor("lm_head.weight");
    ADD_FAILURE();
  } catch (const std::runtime_error &e) {
    EXPECT_EQ(std::string(e.what()), dir.string() + ": tensor 'lm_head.weight' is missing");
  }
}

TEST(CheckpointErrors, ReleaseOfAnotherCheckpointsTensor) {
  fs::path dir = sharded_checkpoint();
  Checkpoint ckpt = Checkpoint::open(dir.string());
  Checkpoint other = Checkpoint::open(dir.string());
  try {
    ckpt.release(other.tensor("a"));
    ADD_FAILURE();
  } catch (const std::runtime_error &e) {
    EXPECT_EQ(std::string(e.what()),
              dir.string() + ": tensor 'a' does not belong to this checkpoint");
  }
}

TEST(CheckpointErrors, UnreadableDtypeIsNamed) {
  fs::path dir = fresh_dir();
  write_file(dir / "model.safetensors",
              test::safetensors_bytes(R"({"w":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})",
                                      std::string(8, '\0')));
  Checkpoint ckpt = Checkpoint::open(dir.string());
  EXPECT_EQ(ckpt.find("w"), nullptr);
  try {
    ckpt.tensor("w");
    ADD_FAILURE();
  } catch (const std::runtime_error &e) {
    EXPECT_THAT(e.what(), HasSubstr("model.safetensors: tensor 'w' has dtype F64, which llmserve does not read"));
  }
}

TEST(CheckpointErrors, Directory) {
  fs::path dir = fresh_dir();
  EXPECT_THAT(open_error(dir / "absent"), HasSubstr("absent: not a directory"));
  EXPECT_THAT(open_error(dir), HasSubstr("no model.safetensors or model.safetensors.index.json"));
  write_file(dir / "pytorch_model.bin", "pickle");
  EXPECT_THAT(open_error(dir), HasSubstr("(PyTorch .bin weights are not read"));
  std::filesystem::remove(dir / "pytorch_model.bin");
  write_file(dir / "model.safetensors", "junk");
  EXPECT_THAT(open_error(dir), HasSubstr("model.safetensors: file is 4 bytes"));
}

TEST(CheckpointErrors, Index) {
  fs::path dir = sharded_checkpoint();
  write_file(dir / "model.safetensors.index.json", "{\"weight_map\": ");
  EXPECT_THAT(open_error(dir), HasSubstr("model.safetensors.index.json: not a valid JSON object"));
  write_file(dir / "model.safetensors.index.json", "[]");
  EXPECT_THAT(open_error(dir), HasSubstr("not a valid JSON object"));
  write_file(dir / "model.safetensors.index.json", R"({"metadata":{}})");
  EXPECT_THAT(open_error(dir), HasSubstr("index.json: missing object field 'weight_map'"));
  write_index(dir, R"({"a":3})");
  EXPECT_THAT(open_error(dir), HasSubstr("tensor 'a': shard 3 is not a file name"));
  write_index(dir, R"({"a":"../model.safetensors"})");
  EXPECT_THAT(open_error(dir), HasSubstr("tensor 'a': shard \"../model.safetensors\" is not a file name"));
  write_index(dir, R"({"a":".."})");
  EXPECT_THAT(open_error(dir), HasSubstr("is not a file name"));
  write_index(dir, R"({"a":""})");
  EXPECT_THAT(open_error(dir), HasSubstr("is not a file name"));
}

TEST(CheckpointErrors, Shards) {
  fs::path dir = sharded_checkpoint();
  write_index(dir, R"({"a":"model-00003-of-00002.safetensors"})");
  EXPECT_THAT(open_error(dir), HasSubstr("model-00003-of-00002.safetensors: cannot open"));
  write_index(dir, R"({"a":"model-00002-of-00002.safetensors"})");
  EXPECT_THAT(open_error(dir), HasSubstr("index.json: tensor 'a' is listed in shard "
                                         "'model-00002-of-00002.safetensors', which does not contain it"));
  write_safetensors((dir / "model-00002-of-00002.safetensors").string(), {view("a", kA, 4)});
  write_index(dir, R"({"a":"model-00001-of-00002.safetensors","b":"model-00002-of-00002.safetensors"})");
  EXPECT_THAT(open_error(dir), HasSubstr(": tensor 'a' is in both "));
  write_file(dir / "model-00002-of-00002.safetensors", "12345678");
  EXPECT_THAT(open_error(dir), HasSubstr("model-00002-of-00002.safetensors: header length"));
}

} // namespace
} // namespace llmserve
