// A client that loses the reply of its first script call, for tests of
// resends (producer.test.js, crossoffer.js).

/**
 * Wraps an ioredis client: the first evalsha or eval runs on the server,
 * but its reply is lost, as when a connection drops after the request
 * went out; the producer must resend it. `state.lost` says whether that
 * happened.
 */
export function lostReply(client) {
  const state = { lost: false };
  const proxy = new Proxy(client, {
    get(target, prop) {
      if (prop === 'evalsha' || prop === 'eval') {
        return async (...args) => {
          const out = await target[prop](...args);
          if (!state.lost) {
            state.lost = true;
            throw new Error('Connection is closed.');
          }
          return out;
        };
      }
      const v = target[prop];
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
  return { client: proxy, state };
}
