/* Evaluates an exported model with the sgp C library: export the model with
 *     sgp export --model heater.sgp --format c --out heater.h
 * and build this file against sgp.h and libsgp_capi.a (docs/src/c-library.md). */
#include <stdio.h>

#include "heater.h"
#include "sgp.h"

/* Static storage is zero-initialised: "not loaded" until a load succeeds. */
static SgpModel model;

int main(void) {
    SgpStatus status = sgp_model_load(&model, sizeof model, heater_blob, HEATER_BLOB_LEN);
    if (status != SGP_STATUS_OK) {
        printf("load failed: %s\n", sgp_status_message(status));
        return 1;
    }
    /* Raw sensor values, in the order heater.h lists the inputs. */
    const float x[HEATER_INPUT_DIM] = {0.5f, -1.0f, 0.25f, 2.0f};
    SgpPrediction p;
    status = sgp_model_predict(&model, x, HEATER_INPUT_DIM, &p);
    if (status != SGP_STATUS_OK) {
        printf("predict failed: %s\n", sgp_status_message(status));
        return 1;
    }
    printf("mean %g, variance %g\n", p.mean, p.variance);
    return 0;
}
