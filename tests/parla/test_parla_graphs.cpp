// SPDX-License-Identifier: MIT
// Parla's synthetic graphs (independent, serial, reduction,
// reduction-scatter) give exactly the values of the same computation run
// in program order (Parla #149: values after a reduction).
#include <cstring>

#include "graphs.hpp"
#include "parla_test_support.hpp"

using namespace parla;
using parla_test::Graph;

Test(graphs, every_graph_computes_what_program_order_computes) {
  struct Case {
    Graph graph;
    int width;
    int rounds;
  };
  const Case cases[] = {
      {Graph::independent, 64, 8},       {Graph::serial, 32, 8},
      {Graph::reduction, 64, 6},         {Graph::reduction_scatter, 64, 6},
      {Graph::reduction_scatter, 2, 20}, {Graph::reduction, 128, 2},
  };
  for (const Case &c : cases) {
    Runtime rt(parla_test::options());
    TaskSpace T("T");
    std::vector<double> data;
    parla_test::spawn_graph(rt, c.graph, c.width, c.rounds, data, T);
    rt.wait(T);
    const std::vector<double> expected = parla_test::reference(c.graph, c.width, c.rounds);
    cr_expect(std::memcmp(data.data(), expected.data(), data.size() * sizeof(double)) == 0,
              "%s width %d rounds %d: values differ from program order", graph_name(c.graph),
              c.width, c.rounds);
    cr_expect_eq(rt.stats().failed + rt.stats().cancelled, 0u);
  }
}
