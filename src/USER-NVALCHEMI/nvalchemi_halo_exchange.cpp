/* ----------------------------------------------------------------------
   USER-NVALCHEMI: the agreement of the ranks' exchange calls.
------------------------------------------------------------------------- */

#include "nvalchemi_halo_exchange.h"

#include <map>
#include <tuple>

namespace LAMMPS_NS {
namespace NVAlchemi {

  const char *to_string(ExchangeCall call)
  {
    switch (call) {
      case ExchangeCall::RETURNED:
        return "return from the model";
      case ExchangeCall::REFRESH_NEIGHBORS:
        return "refresh_neighbors";
      case ExchangeCall::REFRESH_NEIGHBORS_BACKWARD:
        return "refresh_neighbors_backward";
      case ExchangeCall::SCATTER_TO_OWNERS:
        return "scatter_to_owners";
      case ExchangeCall::SCATTER_TO_OWNERS_BACKWARD:
        return "scatter_to_owners_backward";
      case ExchangeCall::SYSTEM_SUM:
        return "system_sum";
      case ExchangeCall::SYSTEM_SUM_BACKWARD:
        return "system_sum_backward";
      case ExchangeCall::RANK_SUM:
        return "rank_sum";
      case ExchangeCall::RANK_SUM_BACKWARD:
        return "rank_sum_backward";
    }
    return "an unknown exchange call";
  }

  std::string CallPoint::str() const
  {
    if (call == ExchangeCall::RETURNED)
      return "returned from the model after " + std::to_string(calls) + " exchange call(s)";
    const bool rows = call == ExchangeCall::REFRESH_NEIGHBORS ||
        call == ExchangeCall::REFRESH_NEIGHBORS_BACKWARD ||
        call == ExchangeCall::SCATTER_TO_OWNERS || call == ExchangeCall::SCATTER_TO_OWNERS_BACKWARD;
    return "exchange call " + std::to_string(calls + 1) + " (" + to_string(call) + ", " +
        std::to_string(size) + (rows ? " values per row)" : " values)");
  }

  void CallPoint::to_words(int64_t words[WORDS]) const
  {
    words[0] = calls;
    words[1] = static_cast<int64_t>(call);
    words[2] = size;
  }

  CallPoint CallPoint::from_words(const int64_t words[WORDS])
  { return {words[0], static_cast<ExchangeCall>(words[1]), words[2]}; }

  std::string where_ranks_stood(const std::vector<CallPoint> &points)
  {
    constexpr size_t NAMED = 8;
    std::map<std::tuple<int64_t, ExchangeCall, int64_t>, size_t> group_of;
    std::vector<std::pair<CallPoint, std::vector<int>>> groups;
    for (size_t p = 0; p < points.size(); ++p) {
      const auto key = std::make_tuple(points[p].calls, points[p].call, points[p].size);
      if (!group_of.count(key)) {
        group_of[key] = groups.size();
        groups.push_back({points[p], {}});
      }
      groups[group_of[key]].second.push_back(static_cast<int>(p));
    }
    std::string where;
    for (const auto &[point, ranks] : groups) {
      std::string list = std::to_string(ranks.front());
      for (size_t k = 1; k < std::min(ranks.size(), NAMED); ++k)
        list += " " + std::to_string(ranks[k]);
      if (ranks.size() > NAMED) list += " and " + std::to_string(ranks.size() - NAMED) + " more";
      where += "; rank" + std::string(ranks.size() > 1 ? "s " : " ") + list + ": " + point.str();
    }
    return where;
  }

  void Exchanger::start_evaluation()
  {
    here = CallPoint();
    made = 0;
    disagreed = false;
  }

  void Exchanger::agree(ExchangeCall call, int64_t size)
  {
    here = {made, call, size};
    int64_t mine[CallPoint::WORDS], lowest[CallPoint::WORDS], highest[CallPoint::WORDS];
    here.to_words(mine);
    range_over_ranks(mine, lowest, highest, CallPoint::WORDS);
    if (!std::equal(lowest, lowest + CallPoint::WORDS, highest)) {
      disagreed = true;
      throw ExchangeMismatch("the ranks made different exchange calls; this rank: " + here.str());
    }
    ++made;
  }

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
