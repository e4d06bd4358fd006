/* SPDX-License-Identifier: MIT */
/* A stand-in for clpeak 1.1.x in the tests of scripts/bench-clpeak.sh: it
 * prints clpeak's console output and XML dump with fixed figures chosen by the
 * run it finds itself in (native, or the AVA_CHANNEL that `ava run` set), so
 * that the tests check the script's tables and ratios without timing anything.
 *
 * FAKE_CLPEAK_FAIL=RUN   in run RUN, enqueueReadBuffer fails as in clpeak: an
 *                        OpenCL error, "Tests skipped", no XML, exit status 0.
 * FAKE_CLPEAK_CRASH=RUN  in run RUN, abort() after the first figure.
 *
 * It is linked against libOpenCL.so.1 (and calls nothing in it) so that the
 * script's check that `ava run` would hand it the guest library holds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct RunFigures {
  const char *run;
  double bandwidth_gbps;
  double latency_us;
};

/* Distinct per run so that every ratio tells which runs it came from. */
static const struct RunFigures kFigures[] = {
    {"native", 10.0, 20.0},
    {"unix", 5.0, 40.0},
    {"tcp", 4.0, 50.0},
    {"shm", 8.0, 25.0},
};

struct Metric {
  const char *xml_name;
  const char *label; /* padded as clpeak pads it */
  const char *indent;
};

static const struct Metric kTransfers[] = {
    {"enqueuewritebuffer", "enqueueWriteBuffer              : ", "      "},
    {"enqueuereadbuffer", "enqueueReadBuffer               : ", "      "},
    {"enqueuewritebuffer_nonblocking", "enqueueWriteBuffer non-blocking : ", "      "},
    {"enqueuereadbuffer_nonblocking", "enqueueReadBuffer non-blocking  : ", "      "},
    {"enqueuemapbuffer", "enqueueMapBuffer(for read)      : ", "      "},
    {"memcpy_from_mapped_ptr", "memcpy from mapped ptr        : ", "        "},
    {"enqueueunmap", "enqueueUnmap(after write)       : ", "      "},
    {"memcpy_to_mapped_ptr", "memcpy to mapped ptr          : ", "        "},
};
enum { kTransferCount = sizeof kTransfers / sizeof kTransfers[0] };

static int env_is(const char *name, const char *value) {
  const char *set = getenv(name);
  return set != NULL && strcmp(set, value) == 0;
}

static const char *current_run(void) {
  const char *channel = getenv("AVA_CHANNEL");
  if (getenv("AVA_WORKER") == NULL || channel == NULL)
    return "native";
  return channel;
}

static int write_xml(const char *path, const struct RunFigures *figures) {
  FILE *f = fopen(path, "w");
  if (f == NULL) {
    perror(path);
    return -1;
  }
  fprintf(f, "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<clpeak os=\"Linux x64\">\n"
             "  <platform name=\"Fake\">\n    <device name=\"fake\">\n"
             "      <transfer_bandwidth unit=\"gbps\">\n");
  for (int i = 0; i < kTransferCount; i++)
    fprintf(f, "        <%s>%g</%s>\n", kTransfers[i].xml_name, figures->bandwidth_gbps,
            kTransfers[i].xml_name);
  fprintf(f,
          "      </transfer_bandwidth>\n"
          "      <kernel_launch_latency unit=\"us\">%g</kernel_launch_latency>\n"
          "    </device>\n  </platform>\n</clpeak>\n",
          figures->latency_us);
  return fclose(f) == 0 ? 0 : -1;
}

int main(int argc, char **argv) {
  const char *xml_path = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--version") == 0 || strcmp(argv[i], "-v") == 0) {
      printf("clpeak version: fake\n");
      return 0;
    }
    if ((strcmp(argv[i], "--xml-file") == 0 || strcmp(argv[i], "-f") == 0) && i + 1 < argc)
      xml_path = argv[++i];
  }
  const char *run = current_run();
  const struct RunFigures *figures = NULL;
  for (size_t i = 0; i < sizeof kFigures / sizeof kFigures[0]; i++) {
    if (strcmp(kFigures[i].run, run) == 0)
      figures = &kFigures[i];
  }
  if (figures == NULL) {
    fprintf(stderr, "fake_clpeak: unknown run '%s'\n", run);
    return 3;
  }
  const int fail = env_is("FAKE_CLPEAK_FAIL", run);
  const int crash = env_is("FAKE_CLPEAK_CRASH", run);

  printf("\nPlatform: Fake\n  Device: fake\n    Driver version  : 1.0 (Linux x64)\n"
         "    Compute units   : 2\n    Clock frequency : 1000 MHz\n\n"
         "    Transfer bandwidth (GBPS)\n");
  for (int i = 0; i < kTransferCount; i++) {
    printf("%s%s", kTransfers[i].indent, kTransfers[i].label);
    if (fail && i == 1) {
      printf("clEnqueueReadBuffer (-5)\n      Tests skipped\n");
      break;
    }
    printf("%.2f\n", figures->bandwidth_gbps);
    if (crash) {
      fflush(stdout);
      abort();
    }
  }
  printf("\n    Kernel launch latency : %.2f us\n\n", figures->latency_us);
  if (fail || xml_path == NULL)
    return 0;
  return write_xml(xml_path, figures) == 0 ? 0 : 1;
}
