/* Evaluates every output of whichever artefact `sgp fit` wrote (one blob, or
 * a container of one model per output where the outputs separate):
 *     sgp export --model arm.sgp --format c --out arm.h
 * and build this file against sgp.h and libsgp_capi.a (docs/src/c-library.md). */
#include <stdio.h>

#include "arm.h"
#include "sgp.h"

/* Static storage is zero-initialised: "not loaded" until a load succeeds. */
static SgpArtefact arm;

int main(void) {
    SgpStatus status = sgp_artefact_load(&arm, sizeof arm, arm_blob, ARM_BLOB_LEN);
    if (status != SGP_STATUS_OK) {
        printf("load failed: %s\n", sgp_status_message(status));
        return 1;
    }
    /* Raw sensor values, in the order arm.h lists the inputs. */
    const float x[ARM_INPUT_DIM] = {0.5f, -1.0f, 0.25f, 2.0f};
    SgpPrediction out[SGP_CAPACITY_P];
    status = sgp_artefact_predict_all(&arm, x, ARM_INPUT_DIM, out, SGP_CAPACITY_P);
    if (status != SGP_STATUS_OK) {
        printf("predict failed: %s\n", sgp_status_message(status));
        return 1;
    }
    for (size_t p = 0; p < sgp_artefact_output_count(&arm); p++) {
        printf("%s: mean %g, variance %g\n", arm_output_names[p], out[p].mean, out[p].variance);
    }
    return 0;
}
