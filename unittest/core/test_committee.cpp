// The model deviation of a committee (nvalchemi_outputs_committee): DeePMD-kit's definitions on numbers
// worked out by hand.

#include "nvalchemi_outputs_committee.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace LAMMPS_NS::NVAlchemi;

TEST(Committee, ForceDeviationIsTheNormOfTheComponentsStandardDeviations)
{
  // atom 0: forces (1,0,0) and (-1,0,0): mean 0, |F - <F>| = 1 for both -> 1
  // atom 1: (0,2,0), (0,2,0) equal -> 0; atom 2: (0,0,0), (3,4,0): deviation |(1.5,2)| = 2.5
  const double a[9] = {1, 0, 0, 0, 2, 0, 0, 0, 0};
  const double b[9] = {-1, 0, 0, 0, 2, 0, 3, 4, 0};
  double deviation[3];
  force_deviation({a, b}, 3, deviation);
  EXPECT_DOUBLE_EQ(deviation[0], 1.0);
  EXPECT_DOUBLE_EQ(deviation[1], 0.0);
  EXPECT_DOUBLE_EQ(deviation[2], 2.5);

  // three members: population (not sample) standard deviation, sqrt(2/3) for -1, 0, 1
  const double c[3] = {0, 0, 0};
  force_deviation({a, b, c}, 1, deviation);
  EXPECT_DOUBLE_EQ(deviation[0], std::sqrt(2.0 / 3.0));
}

TEST(Committee, VirialDeviationCountsOffDiagonalComponentsTwicePerAtom)
{
  // members differ by 2 in xx (deviation 1) and by 4 in xy (deviation 2, in xy and yx), over
  // 2 atoms: per-atom deviations 0.5 (xx), 1 (xy, yx), 0 (the other six)
  const std::array<double, 3> v = virial_deviation({{{1, 5, 5, 0, 7, 7}}, {{3, 5, 5, 4, 7, 7}}}, 2.0);
  EXPECT_DOUBLE_EQ(v[0], 1.0);
  EXPECT_DOUBLE_EQ(v[1], 0.0);
  EXPECT_DOUBLE_EQ(v[2], std::sqrt(0.25 + 1.0 + 1.0) / 3.0);
}

TEST(Committee, EnergyDeviationIsPerAtom)
{
  EXPECT_DOUBLE_EQ(energy_deviation({1.0, 3.0}, 2.0), 0.5);
  EXPECT_DOUBLE_EQ(energy_deviation({-4.0, -4.0, -4.0}, 8.0), 0.0);
}
