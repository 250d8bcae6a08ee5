/* The sgp C library from C: exported blobs load, predictions match the f64
 * trainer within the project's tolerance (QUALITY.md: mean within 1% of the
 * predictive standard deviation, at least 1e-4 y_scale; variance within 1%;
 * class probability within 1e-3), and every misuse gets its own status code.
 *
 * Built and run by capi/tests/c_program.rs, which writes the headers below:
 * the blobs with `sgp export --format c`'s code, golden.h with the trainer's
 * predictions. Exit status 0 if every check passed, 1 otherwise. With the
 * argument --perturb the golden values are moved by twice their tolerance,
 * so that every golden check must fail: the test runs that too, to show that
 * the checks can fail. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sgp.h"

#include "classifier.h"      /* probit classifier */
#include "heater.h"          /* regression model */
#include "heater_matern32.h" /* the same data, Matérn 3/2 kernel */
#include "too_many_basis.h"  /* SGP_CAPACITY_M + 1 basis functions */
#include "too_many_inputs.h" /* SGP_CAPACITY_D + 1 inputs, projected to one feature */
#include "too_wide.h"        /* SGP_CAPACITY_G + 1 inputs and features */
#include "two_outputs.h"     /* two regression outputs on one basis */
#include "three_classes.h"   /* three classes (softmax) on one basis */
#include "pair.h"            /* container: heater and heater_matern32, one model each */
#include "mismatched_pair.h" /* container: heater and classifier (other inputs) */
#include "too_many_members.h" /* container: SGP_CAPACITY_P + 1 heaters */

#include "golden.h"
#include "golden_outputs.h"

static int failures = 0;
static int checks = 0;

#define CHECK(cond, ...)                                                \
    do {                                                                \
        checks++;                                                       \
        if (!(cond)) {                                                  \
            failures++;                                                 \
            printf("FAILED %s:%d: ", __FILE__, __LINE__);               \
            printf(__VA_ARGS__);                                        \
            printf("\n");                                               \
        }                                                               \
    } while (0)

#define EXPECT_STATUS(call, expected)                                   \
    do {                                                                \
        SgpStatus got_ = (call);                                        \
        CHECK(got_ == (expected), "%s: %d (%s), expected %s", #call,    \
              (int)got_, sgp_status_message(got_), #expected);          \
    } while (0)

static SgpModel model;
static SgpModel matern;
static SgpModel classifier;
static SgpModel scratch;
static SgpModel outputs;
static SgpModel classes;
static SgpArtefact artefact;

/* A regression model's predictions at n points against the trainer's. */
static void golden_points(const SgpModel *m, unsigned n, const float (*x)[HEATER_INPUT_DIM],
                          const double *want_mean, const double *tolerance,
                          const double *want_variance, double shift) {
    for (unsigned i = 0; i < n; i++) {
        SgpPrediction p;
        float mean = NAN;
        EXPECT_STATUS(sgp_model_predict(m, x[i], HEATER_INPUT_DIM, &p), SGP_STATUS_OK);
        double expected = want_mean[i] + shift * tolerance[i];
        CHECK(fabs(p.mean - expected) <= tolerance[i],
              "point %u: mean %.9g, trainer %.9g, tolerance %.3g", i, p.mean, expected,
              tolerance[i]);
        double variance = want_variance[i] * (1.0 + shift * GOLDEN_VARIANCE_TOLERANCE);
        CHECK(fabs(p.variance - variance) <= GOLDEN_VARIANCE_TOLERANCE * want_variance[i],
              "point %u: variance %.9g, trainer %.9g", i, p.variance, variance);
        EXPECT_STATUS(sgp_model_mean(m, x[i], HEATER_INPUT_DIM, &mean), SGP_STATUS_OK);
        CHECK(mean == p.mean, "point %u: mean only %.9g, with the variance %.9g", i, mean,
              p.mean);
    }
}

static void golden_regression(double shift) {
    golden_points(&model, GOLDEN_N, golden_x, golden_mean, golden_mean_tolerance,
                  golden_variance, shift);
    golden_points(&matern, MATERN_N, matern_x, matern_mean, matern_mean_tolerance,
                  matern_variance, shift);
}

static void golden_classifier(double shift) {
    for (unsigned i = 0; i < CLASS_N; i++) {
        float probability = NAN;
        EXPECT_STATUS(
            sgp_model_probability(&classifier, class_x[i], CLASSIFIER_INPUT_DIM, &probability),
            SGP_STATUS_OK);
        double expected = class_probability[i] + shift * GOLDEN_PROBABILITY_TOLERANCE;
        CHECK(fabs(probability - expected) <= GOLDEN_PROBABILITY_TOLERANCE,
              "point %u: P(+1) %.9g, trainer %.9g", i, probability, expected);
        SgpPrediction latent;
        EXPECT_STATUS(sgp_model_predict(&classifier, class_x[i], CLASSIFIER_INPUT_DIM, &latent),
                      SGP_STATUS_OK);
        CHECK(latent.variance >= 0.0f, "point %u: latent variance %g", i, latent.variance);
    }
}

/* Every output of a multi-output model in one call, each against the trainer;
 * the first is the single-output call's. */
static void golden_outputs(double shift) {
    CHECK(sgp_model_output_count(&outputs) == 2, "output count %u",
          (unsigned)sgp_model_output_count(&outputs));
    CHECK(sgp_model_class_count(&outputs) == 0, "a regression has no classes");
    for (unsigned i = 0; i < OUTPUTS_N; i++) {
        SgpPrediction all[SGP_CAPACITY_P];
        SgpPrediction first;
        EXPECT_STATUS(
            sgp_model_predict_all(&outputs, outputs_x[i], TWO_OUTPUTS_INPUT_DIM, all, 2),
            SGP_STATUS_OK);
        EXPECT_STATUS(sgp_model_predict(&outputs, outputs_x[i], TWO_OUTPUTS_INPUT_DIM, &first),
                      SGP_STATUS_OK);
        CHECK(first.mean == all[0].mean && first.variance == all[0].variance,
              "point %u: output 0 %.9g differs from the single-output call %.9g", i,
              all[0].mean, first.mean);
        for (unsigned p = 0; p < 2; p++) {
            double mean = outputs_mean[2 * i + p] + shift * outputs_mean_tolerance[2 * i + p];
            CHECK(fabs(all[p].mean - mean) <= outputs_mean_tolerance[2 * i + p],
                  "point %u output %u: mean %.9g, trainer %.9g", i, p, all[p].mean, mean);
            double variance = outputs_variance[2 * i + p] * (1.0 + shift * GOLDEN_VARIANCE_TOLERANCE);
            CHECK(fabs(all[p].variance - variance) <=
                      GOLDEN_VARIANCE_TOLERANCE * outputs_variance[2 * i + p],
                  "point %u output %u: variance %.9g, trainer %.9g", i, p, all[p].variance,
                  variance);
        }
    }
}

/* The class and the class probabilities of a three-class model, against the
 * trainer's; a probit classifier's two classes. */
static void golden_classes(double shift) {
    CHECK(sgp_model_output_count(&classes) == 3, "class latents %u",
          (unsigned)sgp_model_output_count(&classes));
    CHECK(sgp_model_class_count(&classes) == 3, "classes %u",
          (unsigned)sgp_model_class_count(&classes));
    for (unsigned i = 0; i < OUTPUTS_N; i++) {
        float p[3] = {NAN, NAN, NAN};
        size_t class = 99;
        EXPECT_STATUS(sgp_model_classify(&classes, outputs_x[i], THREE_CLASSES_INPUT_DIM,
                                         &class, p, 3),
                      SGP_STATUS_OK);
        unsigned best = 0;
        for (unsigned k = 0; k < 3; k++) {
            double expected = classes_probability[3 * i + k] + shift * GOLDEN_PROBABILITY_TOLERANCE;
            CHECK(fabs(p[k] - expected) <= GOLDEN_PROBABILITY_TOLERANCE,
                  "point %u class %u: p %.9g, trainer %.9g", i, k, p[k], expected);
            best = p[k] > p[best] ? k : best;
        }
        CHECK(class == best, "point %u: class %u, most probable %u", i, (unsigned)class, best);
        CHECK(fabs(p[0] + p[1] + p[2] - 1.0) < 1e-5, "point %u: probabilities sum to %g", i,
              p[0] + p[1] + p[2]);
    }
    float two[2];
    float probability = NAN;
    size_t class = 99;
    CHECK(sgp_model_class_count(&classifier) == 2, "a probit model has two classes");
    EXPECT_STATUS(
        sgp_model_classify(&classifier, class_x[0], CLASSIFIER_INPUT_DIM, &class, two, 2),
        SGP_STATUS_OK);
    EXPECT_STATUS(
        sgp_model_probability(&classifier, class_x[0], CLASSIFIER_INPUT_DIM, &probability),
        SGP_STATUS_OK);
    CHECK(two[1] == probability && two[0] == 1.0f - probability && class == (probability > 0.5f),
          "probit classes %g, %g, class %u; P(+1) %g", two[0], two[1], (unsigned)class,
          probability);
}

/* Misuse of the calls for several outputs. */
static void bad_output_calls(void) {
    SgpPrediction all[SGP_CAPACITY_P];
    float p[SGP_CAPACITY_P];
    size_t class = 99;
    EXPECT_STATUS(sgp_model_predict_all(&outputs, outputs_x[0], TWO_OUTPUTS_INPUT_DIM, all, 1),
                  SGP_STATUS_OUTPUT_TOO_SMALL);
    EXPECT_STATUS(sgp_model_predict_all(&outputs, outputs_x[0], TWO_OUTPUTS_INPUT_DIM, NULL, 2),
                  SGP_STATUS_NULL_POINTER);
    EXPECT_STATUS(sgp_model_predict_all(&outputs, outputs_x[0], 1, all, 2),
                  SGP_STATUS_INPUT_LENGTH);
    EXPECT_STATUS(sgp_model_predict_all(&scratch, outputs_x[0], TWO_OUTPUTS_INPUT_DIM, all, 2),
                  SGP_STATUS_NOT_LOADED);
    EXPECT_STATUS(
        sgp_model_classify(&classes, outputs_x[0], THREE_CLASSES_INPUT_DIM, &class, p, 2),
        SGP_STATUS_OUTPUT_TOO_SMALL);
    CHECK(class == 99, "class written on failure");
    EXPECT_STATUS(
        sgp_model_classify(&classes, outputs_x[0], THREE_CLASSES_INPUT_DIM, NULL, p, 3),
        SGP_STATUS_NULL_POINTER);
    EXPECT_STATUS(
        sgp_model_classify(&outputs, outputs_x[0], TWO_OUTPUTS_INPUT_DIM, &class, p, 3),
        SGP_STATUS_NOT_CLASSIFIER);
    CHECK(sgp_model_output_count(NULL) == 0 && sgp_model_class_count(NULL) == 0,
          "counts of NULL");
}

/* One artefact either way: a container predicts every output as its members
 * do alone, bit for bit, and a blob as sgp_model_predict_all does. */
static void artefacts(void) {
    static uint8_t damaged[PAIR_BLOB_LEN];
    SgpPrediction all[SGP_CAPACITY_P];
    SgpPrediction heater_p, matern_p;
    EXPECT_STATUS(sgp_artefact_predict_all(&artefact, golden_x[0], HEATER_INPUT_DIM, all, 2),
                  SGP_STATUS_NOT_LOADED);
    EXPECT_STATUS(sgp_artefact_load(&artefact, sizeof artefact, pair_blob, PAIR_BLOB_LEN),
                  SGP_STATUS_OK);
    CHECK(sgp_artefact_output_count(&artefact) == PAIR_OUTPUTS &&
              sgp_artefact_input_dim(&artefact) == HEATER_INPUT_DIM &&
              sgp_artefact_is_separate(&artefact),
          "container: %u outputs, %u inputs", (unsigned)sgp_artefact_output_count(&artefact),
          (unsigned)sgp_artefact_input_dim(&artefact));
    for (unsigned i = 0; i < GOLDEN_N; i++) {
        EXPECT_STATUS(sgp_artefact_predict_all(&artefact, golden_x[i], HEATER_INPUT_DIM, all, 2),
                      SGP_STATUS_OK);
        EXPECT_STATUS(sgp_model_predict(&model, golden_x[i], HEATER_INPUT_DIM, &heater_p),
                      SGP_STATUS_OK);
        EXPECT_STATUS(sgp_model_predict(&matern, golden_x[i], HEATER_INPUT_DIM, &matern_p),
                      SGP_STATUS_OK);
        CHECK(memcmp(&all[0], &heater_p, sizeof heater_p) == 0 &&
                  memcmp(&all[1], &matern_p, sizeof matern_p) == 0,
              "point %u: container %.9g, %.9g; members alone %.9g, %.9g", i, all[0].mean,
              all[1].mean, heater_p.mean, matern_p.mean);
    }
    EXPECT_STATUS(sgp_artefact_predict_all(&artefact, golden_x[0], HEATER_INPUT_DIM, all, 1),
                  SGP_STATUS_OUTPUT_TOO_SMALL);
    EXPECT_STATUS(sgp_artefact_predict_all(&artefact, golden_x[0], 1, all, 2),
                  SGP_STATUS_INPUT_LENGTH);
    EXPECT_STATUS(sgp_artefact_predict_all(&artefact, NULL, HEATER_INPUT_DIM, all, 2),
                  SGP_STATUS_NULL_POINTER);
    /* A blob loads too: its outputs as sgp_model_predict_all gives them. */
    EXPECT_STATUS(sgp_artefact_load(&artefact, sizeof artefact, two_outputs_blob,
                                    TWO_OUTPUTS_BLOB_LEN),
                  SGP_STATUS_OK);
    CHECK(sgp_artefact_output_count(&artefact) == 2 && !sgp_artefact_is_separate(&artefact),
          "blob: %u outputs", (unsigned)sgp_artefact_output_count(&artefact));
    SgpPrediction shared[SGP_CAPACITY_P];
    EXPECT_STATUS(
        sgp_artefact_predict_all(&artefact, outputs_x[0], TWO_OUTPUTS_INPUT_DIM, all, 2),
        SGP_STATUS_OK);
    EXPECT_STATUS(
        sgp_model_predict_all(&outputs, outputs_x[0], TWO_OUTPUTS_INPUT_DIM, shared, 2),
        SGP_STATUS_OK);
    CHECK(memcmp(all, shared, 2 * sizeof all[0]) == 0, "blob: artefact %.9g, model %.9g",
          all[0].mean, shared[0].mean);
    /* Refusals, each leaving storage that predicts nothing. */
    memcpy(damaged, pair_blob, PAIR_BLOB_LEN);
    EXPECT_STATUS(sgp_artefact_load(&artefact, sizeof artefact, damaged, PAIR_BLOB_LEN - 1),
                  SGP_STATUS_TRUNCATED);
    EXPECT_STATUS(sgp_artefact_predict_all(&artefact, golden_x[0], HEATER_INPUT_DIM, all, 2),
                  SGP_STATUS_NOT_LOADED);
    CHECK(sgp_artefact_output_count(&artefact) == 0, "outputs after a failed load");
    damaged[PAIR_BLOB_LEN / 2] ^= 0x10;
    EXPECT_STATUS(sgp_artefact_load(&artefact, sizeof artefact, damaged, PAIR_BLOB_LEN),
                  SGP_STATUS_CRC_MISMATCH);
    EXPECT_STATUS(sgp_artefact_load(&artefact, sizeof artefact, mismatched_pair_blob,
                                    MISMATCHED_PAIR_BLOB_LEN),
                  SGP_STATUS_MEMBER_MISMATCH);
    EXPECT_STATUS(sgp_artefact_load(&artefact, sizeof artefact, too_many_members_blob,
                                    TOO_MANY_MEMBERS_BLOB_LEN),
                  SGP_STATUS_CAPACITY_EXCEEDED_OUTPUT);
    EXPECT_STATUS(sgp_artefact_load(&artefact, sizeof artefact - 1, pair_blob, PAIR_BLOB_LEN),
                  SGP_STATUS_STORAGE_TOO_SMALL);
    EXPECT_STATUS(sgp_artefact_load(NULL, sizeof artefact, pair_blob, PAIR_BLOB_LEN),
                  SGP_STATUS_NULL_POINTER);
    EXPECT_STATUS(sgp_artefact_predict_all(&artefact, golden_x[0], HEATER_INPUT_DIM, all, 2),
                  SGP_STATUS_NOT_LOADED);
    CHECK(sgp_artefact_output_count(NULL) == 0 && sgp_artefact_input_dim(NULL) == 0 &&
              !sgp_artefact_is_separate(NULL),
          "artefact counts of NULL");
}

/* Refusals of blobs: each kind of damage has its own code, and a failed load
 * leaves storage that predicts nothing. */
static void bad_blobs(void) {
    static uint8_t copy[HEATER_BLOB_LEN + 1];
    const float x[HEATER_INPUT_DIM] = {0};
    SgpPrediction p;

    EXPECT_STATUS(sgp_model_load(&scratch, sizeof scratch, heater_blob, HEATER_BLOB_LEN),
                  SGP_STATUS_OK);
    CHECK(sgp_model_input_dim(&scratch) == HEATER_INPUT_DIM, "input dim %u",
          (unsigned)sgp_model_input_dim(&scratch));
    EXPECT_STATUS(sgp_model_load(&scratch, sizeof scratch, heater_blob, HEATER_BLOB_LEN - 1),
                  SGP_STATUS_TRUNCATED);
    EXPECT_STATUS(sgp_model_predict(&scratch, x, HEATER_INPUT_DIM, &p), SGP_STATUS_NOT_LOADED);
    CHECK(sgp_model_input_dim(&scratch) == 0, "input dim after a failed load %u",
          (unsigned)sgp_model_input_dim(&scratch));
    EXPECT_STATUS(sgp_model_load(&scratch, sizeof scratch, heater_blob, 3),
                  SGP_STATUS_TRUNCATED);

    memcpy(copy, heater_blob, HEATER_BLOB_LEN);
    copy[HEATER_BLOB_LEN] = 0;
    EXPECT_STATUS(sgp_model_load(&scratch, sizeof scratch, copy, HEATER_BLOB_LEN + 1),
                  SGP_STATUS_TRAILING_BYTES);
    copy[0] = 'X';
    EXPECT_STATUS(sgp_model_load(&scratch, sizeof scratch, copy, HEATER_BLOB_LEN),
                  SGP_STATUS_BAD_MAGIC);
    copy[0] = heater_blob[0];
    copy[4] = 99;
    EXPECT_STATUS(sgp_model_load(&scratch, sizeof scratch, copy, HEATER_BLOB_LEN),
                  SGP_STATUS_UNSUPPORTED_VERSION);
    copy[4] = heater_blob[4];
    copy[HEATER_BLOB_LEN / 2] ^= 0x10;
    EXPECT_STATUS(sgp_model_load(&scratch, sizeof scratch, copy, HEATER_BLOB_LEN),
                  SGP_STATUS_CRC_MISMATCH);

    EXPECT_STATUS(
        sgp_model_load(&scratch, sizeof scratch, too_many_basis_blob, TOO_MANY_BASIS_BLOB_LEN),
        SGP_STATUS_CAPACITY_EXCEEDED_BASIS);
    EXPECT_STATUS(sgp_model_load(&scratch, sizeof scratch, too_wide_blob, TOO_WIDE_BLOB_LEN),
                  SGP_STATUS_CAPACITY_EXCEEDED_FEATURE);
    EXPECT_STATUS(
        sgp_model_load(&scratch, sizeof scratch, too_many_inputs_blob, TOO_MANY_INPUTS_BLOB_LEN),
        SGP_STATUS_CAPACITY_EXCEEDED_INPUT);
    EXPECT_STATUS(sgp_model_predict(&scratch, x, HEATER_INPUT_DIM, &p), SGP_STATUS_NOT_LOADED);
}

/* Misuse of the calls themselves: NULL pointers, wrong lengths, storage
 * smaller than the header says, bad inputs, the wrong question. */
static void bad_calls(void) {
    float x[HEATER_INPUT_DIM + 1] = {0};
    SgpPrediction p;
    float value;

    EXPECT_STATUS(sgp_model_load(NULL, sizeof scratch, heater_blob, HEATER_BLOB_LEN),
                  SGP_STATUS_NULL_POINTER);
    EXPECT_STATUS(sgp_model_load(&scratch, sizeof scratch, NULL, HEATER_BLOB_LEN),
                  SGP_STATUS_NULL_POINTER);
    EXPECT_STATUS(sgp_model_load(&scratch, sizeof scratch - 1, heater_blob, HEATER_BLOB_LEN),
                  SGP_STATUS_STORAGE_TOO_SMALL);
    EXPECT_STATUS(sgp_model_predict(NULL, x, HEATER_INPUT_DIM, &p), SGP_STATUS_NULL_POINTER);
    EXPECT_STATUS(sgp_model_predict(&model, NULL, HEATER_INPUT_DIM, &p),
                  SGP_STATUS_NULL_POINTER);
    EXPECT_STATUS(sgp_model_predict(&model, x, HEATER_INPUT_DIM, NULL), SGP_STATUS_NULL_POINTER);
    EXPECT_STATUS(sgp_model_mean(&model, x, HEATER_INPUT_DIM, NULL), SGP_STATUS_NULL_POINTER);
    EXPECT_STATUS(sgp_model_probability(&classifier, x, CLASSIFIER_INPUT_DIM, NULL),
                  SGP_STATUS_NULL_POINTER);
    CHECK(sgp_model_input_dim(NULL) == 0, "input dim of NULL");

    EXPECT_STATUS(sgp_model_predict(&model, x, HEATER_INPUT_DIM - 1, &p),
                  SGP_STATUS_INPUT_LENGTH);
    EXPECT_STATUS(sgp_model_predict(&model, x, HEATER_INPUT_DIM + 1, &p),
                  SGP_STATUS_INPUT_LENGTH);
    /* The classic slip: a byte count for an element count. */
    EXPECT_STATUS(sgp_model_mean(&model, x, sizeof x, &value), SGP_STATUS_INPUT_LENGTH);
    x[1] = NAN;
    EXPECT_STATUS(sgp_model_predict(&model, x, HEATER_INPUT_DIM, &p),
                  SGP_STATUS_NON_FINITE_INPUT);
    x[1] = INFINITY;
    EXPECT_STATUS(sgp_model_mean(&model, x, HEATER_INPUT_DIM, &value),
                  SGP_STATUS_NON_FINITE_INPUT);
    x[1] = 0.0f;
    EXPECT_STATUS(sgp_model_probability(&model, x, HEATER_INPUT_DIM, &value),
                  SGP_STATUS_NOT_CLASSIFIER);
}

/* The exported training range agrees with the device's check: its midpoint
 * and its corners are inside, a step past either end of any input is not,
 * and a value so far out that f32 overflows on it is an error, not NaN. */
static void training_range(void) {
    float x[HEATER_INPUT_DIM];
    bool inside = false;
    for (unsigned j = 0; j < HEATER_INPUT_DIM; j++) {
        x[j] = 0.5f * (heater_x_min[j] + heater_x_max[j]);
    }
    EXPECT_STATUS(sgp_model_in_training_range(&model, x, HEATER_INPUT_DIM, &inside),
                  SGP_STATUS_OK);
    CHECK(inside, "midpoint of the exported range is outside the device's");
    for (unsigned j = 0; j < HEATER_INPUT_DIM; j++) {
        float mid = x[j];
        float span = heater_x_max[j] - heater_x_min[j];
        const float ends[4] = {heater_x_min[j], heater_x_max[j], heater_x_min[j] - 0.01f * span,
                               heater_x_max[j] + 0.01f * span};
        for (unsigned e = 0; e < 4; e++) {
            x[j] = ends[e];
            EXPECT_STATUS(sgp_model_in_training_range(&model, x, HEATER_INPUT_DIM, &inside),
                          SGP_STATUS_OK);
            CHECK(inside == (e < 2), "input %u at %g: in range %d", j, (double)x[j], inside);
        }
        x[j] = mid;
    }
    EXPECT_STATUS(sgp_model_in_training_range(&model, x, HEATER_INPUT_DIM, NULL),
                  SGP_STATUS_NULL_POINTER);
    EXPECT_STATUS(sgp_model_in_training_range(&model, x, HEATER_INPUT_DIM - 1, &inside),
                  SGP_STATUS_INPUT_LENGTH);
}

/* Every code has its own sentence, and any other number gets one too. */
static void messages(void) {
    static const SgpStatus all[] = {
        SGP_STATUS_OK, SGP_STATUS_TRUNCATED, SGP_STATUS_BAD_MAGIC,
        SGP_STATUS_UNSUPPORTED_VERSION, SGP_STATUS_TRAILING_BYTES, SGP_STATUS_CRC_MISMATCH,
        SGP_STATUS_MALFORMED, SGP_STATUS_CAPACITY_EXCEEDED_BASIS,
        SGP_STATUS_CAPACITY_EXCEEDED_FEATURE, SGP_STATUS_CAPACITY_EXCEEDED_INPUT,
        SGP_STATUS_INCONSISTENT_SIZES, SGP_STATUS_NON_FINITE, SGP_STATUS_INVALID_VALUE,
        SGP_STATUS_INPUT_LENGTH, SGP_STATUS_NON_FINITE_INPUT, SGP_STATUS_NOT_CLASSIFIER,
        SGP_STATUS_NAME_TOO_LONG, SGP_STATUS_INPUT_OVERFLOW, SGP_STATUS_NO_TRAINING_RANGE,
        SGP_STATUS_CAPACITY_EXCEEDED_OUTPUT, SGP_STATUS_NULL_POINTER, SGP_STATUS_MISALIGNED,
        SGP_STATUS_STORAGE_TOO_SMALL, SGP_STATUS_NOT_LOADED, SGP_STATUS_OUTPUT_TOO_SMALL,
    };
    const size_t n = sizeof all / sizeof all[0];
    const char *unknown = sgp_status_message(12345);
    CHECK(unknown != NULL && strcmp(unknown, "unknown sgp status code") == 0, "unknown code: %s",
          unknown ? unknown : "(null)");
    for (size_t i = 0; i < n; i++) {
        const char *m = sgp_status_message(all[i]);
        CHECK(m != NULL && m[0] != '\0' && strcmp(m, unknown) != 0, "status %d has no message",
              (int)all[i]);
        for (size_t j = 0; j < i; j++) {
            CHECK(strcmp(m, sgp_status_message(all[j])) != 0, "statuses %d and %d share \"%s\"",
                  (int)all[i], (int)all[j], m);
        }
    }
}

int main(int argc, char **argv) {
    double shift = (argc > 1 && strcmp(argv[1], "--perturb") == 0) ? 2.0 : 0.0;
    EXPECT_STATUS(sgp_model_predict(&model, golden_x[0], HEATER_INPUT_DIM, &(SgpPrediction){0}),
                  SGP_STATUS_NOT_LOADED);
    EXPECT_STATUS(sgp_model_load(&model, sizeof model, heater_blob, HEATER_BLOB_LEN),
                  SGP_STATUS_OK);
    EXPECT_STATUS(sgp_model_load(&matern, sizeof matern, heater_matern32_blob,
                                 HEATER_MATERN32_BLOB_LEN),
                  SGP_STATUS_OK);
    EXPECT_STATUS(sgp_model_load(&classifier, sizeof classifier, classifier_blob,
                                 CLASSIFIER_BLOB_LEN),
                  SGP_STATUS_OK);
    EXPECT_STATUS(sgp_model_load(&outputs, sizeof outputs, two_outputs_blob,
                                 TWO_OUTPUTS_BLOB_LEN),
                  SGP_STATUS_OK);
    EXPECT_STATUS(sgp_model_load(&classes, sizeof classes, three_classes_blob,
                                 THREE_CLASSES_BLOB_LEN),
                  SGP_STATUS_OK);
    golden_regression(shift);
    golden_classifier(shift);
    golden_outputs(shift);
    golden_classes(shift);
    bad_output_calls();
    artefacts();
    bad_blobs();
    bad_calls();
    training_range();
    messages();
    printf("capacity M = %d, G = %d, D = %d, P = %d; storage %d bytes (artefact %d); %d of "
           "%d checks passed\n",
           SGP_CAPACITY_M, SGP_CAPACITY_G, SGP_CAPACITY_D, SGP_CAPACITY_P,
           SGP_MODEL_STORAGE_SIZE, SGP_ARTEFACT_STORAGE_SIZE, checks - failures, checks);
    return failures == 0 ? 0 : 1;
}
