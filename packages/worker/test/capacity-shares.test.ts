import { describe, expect, it } from "vitest";
import { capacityShares } from "../src/remote/client.js";

describe("a remote worker's capacity split between the schedulers it is connected to", () => {
  it("given one scheduler, then it gets the whole capacity", () => {
    expect(capacityShares(8, 1)).toEqual([8]);
  });

  it("given several, then the shares are as even as they go and add up to the capacity", () => {
    expect(capacityShares(8, 2)).toEqual([4, 4]);
    expect(capacityShares(8, 3)).toEqual([3, 3, 2]);
    expect(capacityShares(3, 3)).toEqual([1, 1, 1]);
  });

  it("given fewer slots than schedulers, then it is refused, saying why", () => {
    expect(() => capacityShares(2, 3)).toThrow(/capacity of 2 cannot be shared by 3 schedulers/);
  });
});
