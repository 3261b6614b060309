import { answerHeldAttempt } from "@chronolog/core";
import { describe, it } from "vitest";
import {
  failed,
  heartbeatExpired,
  instance,
  intended,
  started,
  succeeded,
  tokenOf,
} from "./support/events.js";
import { instanceOf, specification } from "./support/specification.js";

/**
 * answerHeldAttempt, given / when / then: given an attempt stream as the log has it, when a
 * worker holds attempt `token` (it announced it, answered a question with it, or reported its
 * start or a heartbeat), then what it is told: proceed, stop, or nothing.
 */
const spec = specification({ fold: (h) => instanceOf(h), decide: answerHeldAttempt });

describe("answerHeldAttempt: an attempt that is not idempotent", () => {
  it("its start on record and current: it may run (the permission sent once may have been lost)", () => {
    spec
      .given(instance("t", intended(), started()))
      .when(tokenOf("t", 1))
      .then("proceed");
  });

  it("its intent on record, its start not: nothing yet (its start report or next heartbeat writes it)", () => {
    spec.given(instance("t", intended())).when(tokenOf("t", 1)).then("none");
  });

  it("its lease expired: nothing yet (its next heartbeat records it running again)", () => {
    spec
      .given(instance("t", intended(), started(), heartbeatExpired()))
      .when(tokenOf("t", 1))
      .then("none");
  });

  it("abandoned and tried again: the worker holding the first attempt stops it", () => {
    spec
      .given(
        instance(
          "t",
          intended(),
          {
            type: "AttemptAbandoned",
            data: {
              attempt: 1,
              token: tokenOf("t", 1),
              reason: "dispatch never confirmed by a worker",
              by: "scheduler",
              retry: true,
            },
          },
          intended("t", { attempt: 2 }),
        ),
      )
      .when(tokenOf("t", 1))
      .then("stop");
  });

  it("ended (failed, not to be tried again): its worker stops it rather than wait forever", () => {
    spec
      .given(instance("t", intended(), failed()))
      .when(tokenOf("t", 1))
      .then("stop");
  });

  it("ended with a success: stop", () => {
    spec
      .given(instance("t", intended(), started(), succeeded()))
      .when(tokenOf("t", 1))
      .then("stop");
  });

  it("a token the stream does not show (the log read here is behind): nothing, never a stop", () => {
    spec.given(instance("t", intended())).when("tok-from-ahead").then("none");
  });

  it("no stream at all: nothing", () => {
    spec.given([]).when(tokenOf("t", 1)).then("none");
  });
});

describe("answerHeldAttempt: an idempotent attempt", () => {
  it("running: nothing (it needs no permission)", () => {
    spec
      .given(instance("t", intended("t", { idempotent: true }), started()))
      .when(tokenOf("t", 1))
      .then("none");
  });

  it("replaced by a retry: stop", () => {
    spec
      .given(
        instance(
          "t",
          intended("t", { idempotent: true }),
          started(),
          failed("t", 1, "2026-11-30T00:00:00.000Z"),
          intended("t", { idempotent: true, attempt: 2 }),
        ),
      )
      .when(tokenOf("t", 1))
      .then("stop");
  });
});
