// Stacked bar chart of the progress table (data from json_script, no inline code).
(function () {
  const data = JSON.parse(document.getElementById("progress-data").textContent);
  const labels = JSON.parse(document.getElementById("progress-labels").textContent);
  const canvas = document.getElementById("progress-chart");
  if (!canvas || typeof Chart === "undefined") return;
  const series = [
    ["strong", "#2a9d8f"], ["middle", "#e9c46a"], ["weak", "#e76f51"], ["unanswered", "#d9e2ec"],
  ];
  canvas.chart = new Chart(canvas, {
    type: "bar",
    data: {
      labels: data.labels,
      datasets: series.map(([key, color]) => ({ label: labels[key], data: data[key], backgroundColor: color })),
    },
    options: {
      indexAxis: "y",
      maintainAspectRatio: false,
      animation: false,
      scales: { x: { stacked: true, ticks: { precision: 0 } }, y: { stacked: true } },
    },
  });
})();
