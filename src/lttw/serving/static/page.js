// The page at GET / of `lttw serve` (src/lttw/serving/page.py): a text's class probabilities
// as bars (POST /predict, {"inputs": text}) and the words its explanation highlights
// (POST /explain). /?text=... predicts at once. An API key typed here stays in this page's
// memory: no cookie, no storage.
"use strict";

(function () {
  let apiKey = "";
  const $ = (id) => document.getElementById(id);

  async function call(path, body) {
    const headers = { "content-type": "application/json" };
    if (apiKey) headers.authorization = "Bearer " + apiKey;
    const response = await fetch(path, { method: "POST", headers, body: JSON.stringify(body) });
    let doc = null;
    try {
      doc = await response.json();
    } catch (err) {
      doc = null;
    }
    return { status: response.status, doc };
  }

  function errorOf(answer) {
    const said = answer.doc && answer.doc.error ? ": " + answer.doc.error : "";
    return "HTTP " + answer.status + said;
  }

  function say(message, isError) {
    $("status").textContent = message;
    $("status").className = isError ? "error" : "";
  }

  function drawBars(scores) {
    const rows = scores.map(({ label, score }) => {
      const row = document.createElement("div");
      row.className = "bar-row";
      row.dataset.label = label;
      const name = document.createElement("span");
      name.className = "bar-label";
      name.textContent = label;
      const track = document.createElement("span");
      track.className = "bar-track";
      const fill = document.createElement("span");
      fill.className = "bar";
      fill.style.width = (100 * score).toFixed(1) + "%";
      track.append(fill);
      const value = document.createElement("span");
      value.className = "bar-value";
      value.textContent = score.toFixed(3);
      row.append(name, track, value);
      return row;
    });
    $("bars").replaceChildren(...rows);
  }

  function drawWords(doc) {
    const { label, segments } = doc.highlights;
    const parts = segments.map((segment) => {
      if (segment.weight === null) return document.createTextNode(segment.text);
      const mark = document.createElement("mark");
      mark.textContent = segment.text;
      mark.style.backgroundColor = "rgba(255, 160, 0, " + (0.15 + 0.85 * segment.weight) + ")";
      mark.title = "affinity to " + label + ": " + segment.weight.toFixed(2);
      return mark;
    });
    $("words").replaceChildren(...parts);
    const marked = segments.filter((segment) => segment.weight !== null).length;
    $("words-note").textContent = marked
      ? "Highlighted: the words the latent factors were built from; the darker, the more " +
        "they point to " + label + "."
      : "The latent factors were built from none of these words.";
  }

  async function predict(event) {
    if (event) event.preventDefault();
    const text = $("text").value;
    if (!text.trim()) {
      say("Type a text first.", true);
      return;
    }
    if (!$("key-box").hidden) apiKey = $("key").value;
    say("Predicting...");
    document.body.dataset.state = "busy";
    $("go").disabled = true;
    try {
      const answer = await call("/predict", { inputs: text });
      if (answer.status === 401) {
        $("key-box").hidden = false;
        $("key").focus();
        say("This server needs its API key: type it and press Predict.", true);
        document.body.dataset.state = "key";
        return;
      }
      if (answer.status !== 200) {
        say(errorOf(answer), true);
        document.body.dataset.state = "error";
        return;
      }
      drawBars(answer.doc);
      $("result").hidden = false;
      say("Most probable class: " + answer.doc[0].label);
      const why = await call("/explain", { text });
      if (why.status === 200) {
        drawWords(why.doc);
      } else {
        $("words").replaceChildren();
        $("words-note").textContent = "No explanation: " + errorOf(why);
      }
      document.body.dataset.state = "done";
    } catch (err) {
      say("The server did not answer: " + err.message, true);
      document.body.dataset.state = "error";
    } finally {
      $("go").disabled = false;
    }
  }

  $("try").addEventListener("submit", predict);
  const given = new URLSearchParams(window.location.search).get("text");
  if (given) {
    $("text").value = given;
    predict();
  }
})();
