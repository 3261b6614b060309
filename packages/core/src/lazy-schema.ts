/**
 * A schema made on its first use, not when its module loads. A command that reads the log and
 * a checkpoint validates nothing, yet loading the modules that hold the events' and the
 * declarations' schemas made every one of them (about seventy, each a chain of zod calls): a
 * large part of a short command's start. What `lazySchema` returns stands for the schema made
 * by `make`: every property read, call, `in` and `instanceof` goes to it, made the first time
 * one is asked for.
 */
export function lazySchema<Schema extends object>(make: () => Schema): Schema {
  let made: Schema | undefined;
  const schema = (): Schema => {
    if (made === undefined) made = make();
    return made;
  };
  return new Proxy(Object.create(null) as Schema, {
    get: (_, key) => {
      const s = schema();
      return Reflect.get(s, key, s);
    },
    set: (_, key, value) => Reflect.set(schema(), key, value),
    has: (_, key) => Reflect.has(schema(), key),
    ownKeys: () => Reflect.ownKeys(schema()),
    getOwnPropertyDescriptor: (_, key) => {
      const d = Reflect.getOwnPropertyDescriptor(schema(), key);
      // The stand-in's own target holds none: a proxy may not call one of them fixed.
      if (d) d.configurable = true;
      return d;
    },
    defineProperty: (_, key, d) => Reflect.defineProperty(schema(), key, d),
    deleteProperty: (_, key) => Reflect.deleteProperty(schema(), key),
    getPrototypeOf: () => Reflect.getPrototypeOf(schema()),
  });
}
