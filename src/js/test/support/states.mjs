// Waiting for a Client's connection state in tests.

/** Resolves at the first change of `client`'s state to `state`. */
export function reached(client, state) {
  return new Promise((resolve) => {
    const stop = client.onStateChange((s) => {
      if (s !== state) return;
      stop();
      resolve();
    });
  });
}
