/**
 * A small seeded generator (mulberry32): numbers in [0, 1), the same sequence for the same seed
 * at every run, so that a generated case that fails can be run again as it was. The benchmarks'
 * catalogue generator is the one place it is written.
 */
export { random as seededRandom } from "../../bench/scale/catalogue.mjs";
