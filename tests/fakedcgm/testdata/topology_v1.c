/*
 * topology_v1: a DCGM client that still asks dcgmGetDeviceTopology for the
 * version 1 struct (dcgm_structs.h dcgmDeviceTopology_v1), as programs built
 * before DCGM widened the topology path to 64 bits do. It prints the
 * return code, then one "<gpuId> <path> <localNvLinkIds>" line per peer of
 * the GPU given as its argument.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dcgm_agent.h"
#include "dcgm_structs.h"

int main(int argc, char **argv)
{
    unsigned int gpu = argc > 1 ? (unsigned int)atoi(argv[1]) : 0;
    dcgmHandle_t h = 0;
    if (dcgmInit() != DCGM_ST_OK || dcgmStartEmbedded(DCGM_OPERATION_MODE_AUTO, &h) != DCGM_ST_OK) {
        fprintf(stderr, "cannot start DCGM\n");
        return 2;
    }
    dcgmDeviceTopology_v1 t;
    memset(&t, 0, sizeof(t));
    t.version = dcgmDeviceTopology_version1;
    dcgmReturn_t rc = dcgmGetDeviceTopology(h, gpu, (dcgmDeviceTopology_t *)&t);
    printf("rc %d version %#x\n", (int)rc, t.version);
    for (unsigned int i = 0; rc == DCGM_ST_OK && i < t.numGpus; i++)
        printf("%u %#x %#x\n", t.gpuPaths[i].gpuId, (unsigned int)t.gpuPaths[i].path, t.gpuPaths[i].localNvLinkIds);
    dcgmStopEmbedded(h);
    dcgmShutdown();
    return 0;
}
