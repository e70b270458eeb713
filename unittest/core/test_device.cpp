// Unit tests: the device keyword, the choice of a rank's device, and where tensors are placed
// on the CPU (views of the package's buffers, outputs back without a copy).

#include "nvalchemi_step_device.h"
#include "nvalchemi_runner_torch.h"

#include "gtest/gtest.h"

#include <stdexcept>
#include <string>

using namespace LAMMPS_NS::NVAlchemi;

namespace {
// the message of the std::invalid_argument `body` throws ("" if none)
template <typename F> std::string refusal(F &&body)
{
  try {
    body();
  } catch (std::invalid_argument &e) {
    return e.what();
  }
  return "";
}

const CudaRuntime CPU_ONLY{false, 0};
const CudaRuntime NO_GPU{true, 0};
const CudaRuntime TWO_GPUS{true, 2};
}    // namespace

TEST(Device, ParsesTheKeyword)
{
  EXPECT_EQ(parse_device("cpu").str(), "cpu");
  EXPECT_FALSE(parse_device("cpu").is_gpu());
  EXPECT_EQ(parse_device("cuda").str(), "cuda");
  EXPECT_EQ(parse_device("cuda").index, -1);
  EXPECT_EQ(parse_device("cuda:3").index, 3);
  EXPECT_EQ(parse_device("cuda:3").str(), "cuda:3");
  for (const char *bad : {"gpu", "CUDA", "cuda:", "cuda:-1", "cuda:x", "cuda:1.5", "cuda0", ""})
    EXPECT_NE(refusal([&] {
                parse_device(bad);
              }).find("must be cpu, cuda or cuda:N"),
              std::string::npos)
        << bad;
}

TEST(Device, AnswersWhatItsCallersAsk)
{
  const Device cpu = parse_device("cpu"), gpu = parse_device("cuda:1");
  EXPECT_FALSE(cpu.is_gpu());
  EXPECT_TRUE(gpu.is_gpu());
  EXPECT_EQ(cpu.package_key(), "cpu");
  EXPECT_EQ(gpu.package_key(), "cuda");
  EXPECT_EQ(cpu.loader_index(), -1);
  EXPECT_EQ(gpu.loader_index(), 1);
  EXPECT_EQ(Device::gpu(2).str(), "cuda:2");
}

TEST(Device, DefaultIsAGpuWhenLibTorchSeesOne)
{
  EXPECT_EQ(choose_device(nullptr, CPU_ONLY, 0).str(), "cpu");
  EXPECT_EQ(choose_device(nullptr, NO_GPU, 3).str(), "cpu");
  EXPECT_EQ(choose_device(nullptr, TWO_GPUS, 0).str(), "cuda:0");
  EXPECT_EQ(choose_device(nullptr, TWO_GPUS, 3).str(), "cuda:1");
}

TEST(Device, BareCudaSpreadsTheRanksOfANodeOverItsGpus)
{
  const Device cuda = parse_device("cuda");
  for (int rank = 0; rank < 6; ++rank)
    EXPECT_EQ(choose_device(&cuda, TWO_GPUS, rank).index, rank % 2);
  const Device second = parse_device("cuda:1");
  EXPECT_EQ(choose_device(&second, TWO_GPUS, 0).str(), "cuda:1");
  const Device cpu = parse_device("cpu");
  EXPECT_EQ(choose_device(&cpu, TWO_GPUS, 0).str(), "cpu");
}

TEST(Device, CudaWithoutAGpuIsRefusedSayingWhatToChange)
{
  const Device cuda = parse_device("cuda");
  EXPECT_NE(refusal([&] {
              choose_device(&cuda, CPU_ONLY, 0);
            }).find("device cuda needs a LibTorch built with CUDA, and this one is a CPU-only"),
            std::string::npos);
  EXPECT_NE(refusal([&] {
              choose_device(&cuda, NO_GPU, 0);
            }).find("LibTorch sees no GPU"),
            std::string::npos);
  const Device third = parse_device("cuda:2");
  EXPECT_NE(refusal([&] {
              choose_device(&third, TWO_GPUS, 0);
            }).find("device cuda:2: this node has 2 visible GPU(s), cuda:0 to cuda:1"),
            std::string::npos);
}

TEST(Device, LibTorchWithoutCudaSeesNoGpu)
{
  const CudaRuntime runtime = cuda_runtime();
  if (!runtime.built_with_cuda) EXPECT_EQ(runtime.device_count, 0);
  EXPECT_GE(runtime.device_count, 0);
}

TEST(Placement, CpuInputsAreViewsInTheModelsPrecision)
{
  std::vector<double> values = {1.0, 2.0, 3.0, 4.0, 5.0, 6.0};
  std::vector<int64_t> indices = {7, 8};
  Placement placement;
  const auto view = placement.input(0, values.data(), {2, 3}, torch::kFloat64, true);
  EXPECT_EQ(view.data_ptr<double>(), values.data());
  EXPECT_EQ(placement.input(1, indices.data(), {2}, torch::kInt64, false).data_ptr<int64_t>(),
            indices.data());
  placement.real = torch::kFloat32;
  const auto single = placement.input(0, values.data(), {2, 3}, torch::kFloat64, true);
  EXPECT_EQ(single.scalar_type(), torch::kFloat32);
  EXPECT_FLOAT_EQ(single[1][2].item<float>(), 6.0f);
  // integer inputs keep their type whatever the model's precision
  EXPECT_EQ(placement.input(1, indices.data(), {2}, torch::kInt64, false).data_ptr<int64_t>(),
            indices.data());
}

TEST(Placement, CpuOutputsComeBackWithoutACopyWhenTheyAreDouble)
{
  Placement placement;
  const auto doubles = torch::arange(6, torch::kFloat64).view({2, 3});
  const auto floats = torch::arange(4, torch::kFloat32);
  const auto host = placement.to_host({doubles, floats, doubles.sum()});
  ASSERT_EQ(host.size(), 3u);
  EXPECT_EQ(host[0].data_ptr<double>(), doubles.data_ptr<double>());
  EXPECT_EQ(host[1].scalar_type(), torch::kFloat64);
  EXPECT_EQ(host[1].sizes(), floats.sizes());
  EXPECT_DOUBLE_EQ(host[1][3].item<double>(), 3.0);
  EXPECT_DOUBLE_EQ(host[2].item<double>(), 15.0);
  const SharedValues shared = shared_values(host[0]);
  EXPECT_EQ(shared.get(), doubles.data_ptr<double>());
  EXPECT_EQ(shared.size(), 6);
}
