// Combined scorecard: a bar chart of each topic's score per interviewer and the mean (vendored Chart.js).
(function () {
  "use strict";
  const printButton = document.getElementById("print-btn");
  if (printButton) printButton.addEventListener("click", () => window.print());
  const node = document.getElementById("topic-chart-data");
  const canvas = document.getElementById("topic-chart");
  if (!node || !canvas || !window.Chart) return;
  const chart = JSON.parse(node.textContent);
  const palette = ["#2a6f97", "#e76f51", "#8ab17d", "#9d4edd", "#f4a261", "#264653"];
  const datasets = chart.series.map((series, i) => ({
    label: series.label,
    data: series.data,
    backgroundColor: palette[i % palette.length],
  }));
  datasets.push({ label: chart.mean_label, data: chart.mean, backgroundColor: "#333333" });
  new window.Chart(canvas, {
    type: "bar",
    data: { labels: chart.labels, datasets: datasets },
    options: {
      animation: false,
      responsive: true,
      scales: { y: { min: 0, max: 4, ticks: { stepSize: 1 }, title: { display: true, text: chart.axis } } },
    },
  });
})();
