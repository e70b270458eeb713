// Unit tests: the LAMMPS-free parts of fix nvalchemi/dd's features: the drift fit, the force
// guard and the extended-XYZ frames of snapshots.

#include "nvalchemi_dd_monitor.h"

#include "gtest/gtest.h"

#include <cmath>
#include <limits>

using namespace LAMMPS_NS::NVAlchemi;

TEST(DriftFit, SlopeOfTheLastWindowByLeastSquares)
{
  DriftFit fit(3);
  EXPECT_FALSE(fit.add(0, 1.0));
  EXPECT_FALSE(fit.add(10, 5.0));
  EXPECT_EQ(fit.slope(), 0.0);    // not full yet
  EXPECT_TRUE(fit.add(20, 2.0));
  // steps 0 10 20, energies 1 5 2: slope = sum dt de / sum dt^2 = (-10*-1.667 + 10*-0.667) / 200
  EXPECT_NEAR(fit.slope(), 0.05, 1e-15);
  EXPECT_TRUE(fit.add(30, 3.0));    // window slides to 10 20 30: energies 5 2 3
  EXPECT_NEAR(fit.slope(), -0.1, 1e-15);
}

TEST(DriftFit, StateRoundTripsAndAShorterWindowTrims)
{
  DriftFit fit(4);
  for (int k = 0; k < 4; ++k) fit.add(5 * k, 0.5 * k * k);
  const std::vector<double> state = fit.state();
  ASSERT_EQ(state.size(), 2u + 2 * 4);
  DriftFit restored(4);
  restored.restore(state.data());
  EXPECT_EQ(restored.slope(), fit.slope());
  EXPECT_EQ(restored.state(), state);
  restored.set_window(2);
  EXPECT_EQ(restored.state().size(), 2u + 2 * 2);
  EXPECT_TRUE(restored.add(20, 8.0));    // samples (15, 4.5), (20, 8)
  EXPECT_NEAR(restored.slope(), 0.7, 1e-15);
}

TEST(ForceCheck, NamesNonFiniteAndLargeForcesOfTheGroupOnly)
{
  const double nan = std::numeric_limits<double>::quiet_NaN();
  double forces[5][3] = {{1, 0, 0}, {nan, 0, 0}, {30, 40, 0}, {0, 0, 60}, {nan, 0, 0}};
  double *f[5] = {forces[0], forces[1], forces[2], forces[3], forces[4]};
  const int mask[5] = {1, 1, 1, 1, 2};    // atom 4 is not in the group (bit 1)
  const ForceCheck check = check_forces(f, mask, 1, 5, 49.0, false, 1);
  EXPECT_EQ(check.non_finite, 1);
  EXPECT_EQ(check.non_finite_atoms, std::vector<int>{1});
  EXPECT_EQ(check.too_large, 2);
  EXPECT_EQ(check.too_large_atoms, std::vector<int>{2});    // at most `named` named
  EXPECT_EQ(forces[2][0], 30.0);                            // abort leaves forces alone
}

TEST(ForceCheck, ClampScalesToTheLimitKeepingDirection)
{
  double forces[2][3] = {{30, 40, 0}, {3, 4, 0}};
  double *f[2] = {forces[0], forces[1]};
  const int mask[2] = {1, 1};
  const ForceCheck check = check_forces(f, mask, 1, 2, 10.0, true, 8);
  EXPECT_EQ(check.clamped, 1);
  EXPECT_EQ(check.too_large, 0);
  EXPECT_DOUBLE_EQ(forces[0][0], 6.0);
  EXPECT_DOUBLE_EQ(forces[0][1], 8.0);
  EXPECT_EQ(forces[1][0], 3.0);
}

TEST(ExtendedXYZ, FrameHasHeaderAndOneFullPrecisionLinePerAtom)
{
  const Cell cell = {{{2, 0, 0}, {0.5, 3, 0}, {0, 0, 4}}, {true, true, false}};
  const std::vector<FrameAtom> atoms = {{7, 18, {0.1, 0.2, 0.3}, {1, -2, 3}},
                                        {9, 0, {1.0 / 3.0, 0, 0}, {0, 0, 0}}};
  EXPECT_EQ(extxyz_frame(atoms, cell, -1.25, 40),
            "2\nLattice=\"2 0 0 0.5 3 0 0 0 4\" Properties=species:S:1:pos:R:3:forces:R:3:id:I:1 "
            "energy=-1.25 pbc=\"T T F\" timestep=40\n"
            "Ar 0.10000000000000001 0.20000000000000001 0.29999999999999999 1 -2 3 7\n"
            "X 0.33333333333333331 0 0 0 0 0 9\n");
}
